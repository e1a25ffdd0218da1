//! Domains: the enterprise vocabulary every generator draws from, keyed by words of the requested
//! domain, so items vary with the domain a request names.

use super::*;

pub(super) struct Flavor {
    pub(super) keywords: &'static [&'static str],
    pub(super) orgs: &'static [&'static str],
    pub(super) systems: &'static [&'static str],
    /// kebab-case service names for code and configuration snippets.
    pub(super) services: &'static [&'static str],
    /// Single-word business objects, usable in identifiers.
    pub(super) entities: &'static [&'static str],
    pub(super) products: &'static [&'static str],
    pub(super) teams: &'static [&'static str],
}

pub(super) const FLAVORS: &[Flavor] = &[
    Flavor {
        keywords: &["cloud", "devops", "kubernetes", "infra", "platform eng"],
        orgs: &[
            "Stratus Cloudworks",
            "Nimbus Platform Group",
            "Ridgeline DevOps",
            "Cirrus Compute",
        ],
        systems: &[
            "deployment pipeline",
            "Kubernetes platform",
            "artifact registry",
            "observability stack",
            "edge proxy fleet",
        ],
        services: &[
            "deploy-api",
            "build-runner",
            "artifact-store",
            "metrics-gateway",
        ],
        entities: &["deployment", "build", "release", "artifact"],
        products: &["Managed CI", "Cluster Insights", "Edge Delivery"],
        teams: &["platform team", "SRE team", "infrastructure group"],
    },
    Flavor {
        keywords: &["fintech", "payment", "bank", "financ", "lending"],
        orgs: &[
            "Keystone Payments",
            "Ledgerly",
            "Brightwater Pay",
            "Copperline Financial",
        ],
        systems: &[
            "payments gateway",
            "ledger service",
            "card authorisation service",
            "settlement pipeline",
            "fraud scoring engine",
        ],
        services: &[
            "payments-gateway",
            "ledger-api",
            "settlement-worker",
            "fraud-scorer",
        ],
        entities: &["payment", "refund", "invoice", "payout"],
        products: &["Merchant Analytics", "Instant Payouts", "Treasury Console"],
        teams: &[
            "payments platform team",
            "risk engineering team",
            "treasury operations group",
        ],
    },
    Flavor {
        keywords: &["hipaa", "health", "clinic", "medical", "patient", "care"],
        orgs: &[
            "Caremont Health",
            "Mediva Systems",
            "Northstar Clinics",
            "Halcyon Health Cloud",
        ],
        systems: &[
            "patient portal",
            "claims intake service",
            "EHR integration layer",
            "appointment scheduler",
            "lab results pipeline",
        ],
        services: &[
            "patient-portal",
            "claims-intake",
            "ehr-sync",
            "scheduler-api",
        ],
        entities: &["appointment", "referral", "encounter", "prescription"],
        products: &[
            "Care Coordination",
            "Telehealth Suite",
            "Patient Engagement",
        ],
        teams: &[
            "clinical systems team",
            "health data engineering team",
            "compliance engineering group",
        ],
    },
    Flavor {
        keywords: &[
            "logistic",
            "shipping",
            "freight",
            "supply",
            "warehouse",
            "fleet",
        ],
        orgs: &[
            "Tidewater Freight",
            "Crossdock Logistics",
            "Meridian Haulage",
            "Bluefin Shipping",
        ],
        systems: &[
            "shipment tracking service",
            "warehouse management system",
            "route optimiser",
            "carrier integration hub",
            "dock scheduling tool",
        ],
        services: &["tracking-api", "wms-sync", "route-optimizer", "carrier-hub"],
        entities: &["shipment", "pallet", "consignment", "manifest"],
        products: &["Fleet Visibility", "Yard Management", "Freight Audit"],
        teams: &[
            "logistics platform team",
            "warehouse systems team",
            "carrier integrations group",
        ],
    },
    Flavor {
        keywords: &["iam", "security", "identity", "access", "auth"],
        orgs: &[
            "Gatekeep Security",
            "Ironbridge Identity",
            "Sentinel Trust",
            "Bastion Labs",
        ],
        systems: &[
            "identity provider",
            "access review tool",
            "secrets vault",
            "privileged access gateway",
            "SSO broker",
        ],
        services: &["auth-service", "token-issuer", "vault-proxy", "scim-sync"],
        entities: &["session", "token", "role", "credential"],
        products: &["Identity Governance", "Access Analytics", "Secrets Manager"],
        teams: &[
            "identity team",
            "security engineering team",
            "access management group",
        ],
    },
    Flavor {
        keywords: &["commerce", "retail", "shop", "marketplace", "store"],
        orgs: &[
            "Cartwheel Commerce",
            "Marketlane",
            "Shopwright",
            "Basketry Retail",
        ],
        systems: &[
            "checkout service",
            "product catalogue",
            "order management system",
            "promotions engine",
            "search service",
        ],
        services: &[
            "checkout-api",
            "catalog-sync",
            "order-service",
            "promo-engine",
        ],
        entities: &["order", "cart", "coupon", "product"],
        products: &["Storefront Pro", "Loyalty Cloud", "Marketplace Connect"],
        teams: &[
            "checkout team",
            "commerce platform team",
            "merchandising systems group",
        ],
    },
    Flavor {
        keywords: &["telecom", "telco", "mobile", "network", "carrier"],
        orgs: &[
            "Arcadia Telecom",
            "Signalpath Networks",
            "Skyreach Mobile",
            "Fibrelink",
        ],
        systems: &[
            "subscriber billing platform",
            "number porting service",
            "network inventory system",
            "SIM provisioning service",
            "packet core",
        ],
        services: &[
            "billing-engine",
            "porting-api",
            "sim-provisioner",
            "inventory-sync",
        ],
        entities: &["subscriber", "tariff", "device", "circuit"],
        products: &["Business Connect", "IoT Fleet", "Roaming Plus"],
        teams: &[
            "network operations team",
            "BSS engineering team",
            "telecom platform group",
        ],
    },
    Flavor {
        keywords: &["manufactur", "erp", "factory", "industrial", "plant"],
        orgs: &[
            "Forgeline Industries",
            "Cobalt Works",
            "Tempest Manufacturing",
            "Millbrook Components",
        ],
        systems: &[
            "ERP system",
            "MES integration",
            "bill-of-materials service",
            "production scheduler",
            "quality inspection system",
        ],
        services: &["erp-connector", "mes-bridge", "bom-service", "mrp-runner"],
        entities: &["part", "batch", "supplier", "assembly"],
        products: &["Shop Floor Analytics", "Supplier Portal", "Quality Cloud"],
        teams: &["manufacturing systems team", "ERP team", "plant IT group"],
    },
    Flavor {
        keywords: &["insur", "underwrit", "actuar"],
        orgs: &[
            "Harborline Insurance",
            "Assurely",
            "Granite Mutual",
            "Clearview Underwriters",
        ],
        systems: &[
            "claims management system",
            "policy administration system",
            "underwriting rules engine",
            "quote service",
            "broker portal",
        ],
        services: &[
            "claims-api",
            "policy-admin",
            "quote-engine",
            "broker-portal",
        ],
        entities: &["claim", "policy", "quote", "premium"],
        products: &["Broker Insights", "Claims Express", "Policy Hub"],
        teams: &[
            "claims platform team",
            "underwriting systems team",
            "core insurance group",
        ],
    },
    Flavor {
        keywords: &["crm", "sales", "customer relationship", "marketing"],
        orgs: &[
            "Pipeline Pro",
            "Relata",
            "Northwind CRM",
            "Beacon Sales Cloud",
        ],
        systems: &[
            "CRM sync service",
            "lead routing engine",
            "sales forecasting module",
            "contact enrichment service",
            "marketing automation bridge",
        ],
        services: &[
            "crm-sync",
            "lead-router",
            "forecast-api",
            "enrichment-worker",
        ],
        entities: &["lead", "contact", "opportunity", "account"],
        products: &["Sales Engagement", "Revenue Insights", "Partner Portal"],
        teams: &[
            "revenue operations team",
            "CRM platform team",
            "sales systems group",
        ],
    },
    Flavor {
        keywords: &["legal", "law", "contract", "compliance"],
        orgs: &[
            "Lexbridge Legal",
            "Clausewise",
            "Verity Law Systems",
            "Docketry",
        ],
        systems: &[
            "contract lifecycle platform",
            "e-discovery pipeline",
            "matter management system",
            "clause library",
            "e-signature service",
        ],
        services: &[
            "contract-api",
            "ediscovery-worker",
            "matter-service",
            "esign-gateway",
        ],
        entities: &["contract", "matter", "clause", "signature"],
        products: &["Contract Analytics", "Matter Desk", "Signing Suite"],
        teams: &[
            "legal operations team",
            "legal engineering team",
            "knowledge management group",
        ],
    },
    Flavor {
        keywords: &["data", "analytic", "etl", "warehouse", "bi "],
        orgs: &[
            "Lakeshore Analytics",
            "Quartzite Data",
            "Parquet Works",
            "Delta Ridge Data",
        ],
        systems: &[
            "data lake",
            "streaming ingestion pipeline",
            "feature store",
            "BI semantic layer",
            "ETL orchestrator",
        ],
        services: &[
            "ingest-worker",
            "feature-store",
            "query-gateway",
            "etl-scheduler",
        ],
        entities: &["dataset", "pipeline", "table", "job"],
        products: &["Self-Serve Analytics", "Data Catalog", "Streaming Insights"],
        teams: &[
            "data platform team",
            "analytics engineering team",
            "data governance group",
        ],
    },
];

pub(super) const FIRST_NAMES: &[&str] = &[
    "Priya", "Marcus", "Dana", "Aisha", "Jonas", "Mei", "Rafael", "Ingrid", "Kwame", "Sofia",
    "Dmitri", "Leila", "Owen", "Hana", "Mateo", "Grace", "Arjun", "Nadia", "Elliot", "Yuki",
    "Samuel", "Fatima", "Lucas", "Brigid",
];

pub(super) const LAST_NAMES: &[&str] = &[
    "Raman",
    "Okafor",
    "Whitfield",
    "Lindqvist",
    "Tanaka",
    "Moreau",
    "Castillo",
    "Brennan",
    "Haddad",
    "Novak",
    "Fischer",
    "Adeyemi",
    "Kowalski",
    "Delgado",
    "Nakamura",
    "Osei",
    "Petrov",
    "Sandoval",
    "Iyer",
    "Gallagher",
    "Abernathy",
    "Quist",
    "Valdez",
    "Thorne",
];

pub(super) const WEEKDAYS: &[&str] = &["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"];

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Person {
    pub(super) first: &'static str,
    pub(super) last: &'static str,
}

impl Person {
    pub(super) fn full(&self) -> String {
        format!("{} {}", self.first, self.last)
    }

    pub(super) fn golds(&self) -> Vec<String> {
        vec![self.full(), self.last.to_string()]
    }
}

/// The entities one item talks about.
pub(super) struct Ctx {
    pub(super) org: &'static str,
    pub(super) system: &'static str,
    pub(super) service: &'static str,
    pub(super) entity: &'static str,
    pub(super) product: &'static str,
    pub(super) team: &'static str,
    pub(super) people: Vec<Person>,
    /// Steps through the fact banks, problem kinds and templates in order, so that the items of
    /// one request, and of consecutive requests for one domain, differ in kind and wording.
    pub(super) rotation: usize,
    /// The row of the fact bank a factual item asks about ([`fact_row`]).
    pub(super) fact: usize,
}

impl Ctx {
    pub(super) fn new(pick: &mut Pick, domain: &str, slot: usize) -> Ctx {
        let lower = domain.to_lowercase();
        let flavor = FLAVORS
            .iter()
            .find(|flavor| flavor.keywords.iter().any(|word| lower.contains(word)))
            .unwrap_or_else(|| &FLAVORS[Pick::new(&[domain]).below(FLAVORS.len())]);
        let firsts = pick.distinct(4, FIRST_NAMES.len());
        let lasts = pick.distinct(4, LAST_NAMES.len());
        Ctx {
            org: pick.one(flavor.orgs),
            system: pick.one(flavor.systems),
            service: pick.one(flavor.services),
            entity: pick.one(flavor.entities),
            product: pick.one(flavor.products),
            team: pick.one(flavor.teams),
            rotation: slot + Pick::new(&[domain, "rotation"]).below(1000),
            fact: slot,
            people: firsts
                .iter()
                .zip(&lasts)
                .map(|(first, last)| Person {
                    first: FIRST_NAMES[*first],
                    last: LAST_NAMES[*last],
                })
                .collect(),
        }
    }

    /// The rotation's choice among `n`.
    pub(super) fn turn(&self, n: usize) -> usize {
        self.rotation % n
    }

    /// A second choice among `n`, changing once per `kinds` slots.
    pub(super) fn turn_within(&self, kinds: usize, n: usize) -> usize {
        (self.rotation / kinds) % n
    }

    pub(super) fn person(&self, index: usize) -> &Person {
        &self.people[index % self.people.len()]
    }

    /// Replaces `<org>`, `<system>`, `<svc>`, `<entity>`, `<Entity>`, `<product>`, `<team>`,
    /// `<first>`, `<name>`, `<first2>`, `<name2>`, `<name3>`.
    pub(super) fn fill(&self, template: &str) -> String {
        let mut entity_title = self.entity.to_string();
        if let Some(first) = entity_title.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        template
            .replace("<org>", self.org)
            .replace("<system>", self.system)
            .replace("<svc>", self.service)
            .replace("<entity>", self.entity)
            .replace("<Entity>", &entity_title)
            .replace("<product>", self.product)
            .replace("<team>", self.team)
            .replace("<first>", self.person(0).first)
            .replace("<name>", &self.person(0).full())
            .replace("<first2>", self.person(1).first)
            .replace("<name2>", &self.person(1).full())
            .replace("<name3>", &self.person(2).full())
    }
}

/// Draws items until one passes `ok` (the gold leak checks need a redraw now and then).
pub(super) fn drawn(
    category: &str,
    domain: &str,
    seq: usize,
    index: usize,
    count: usize,
    make: impl Fn(&mut Pick, &Ctx) -> Item,
    ok: impl Fn(&Item) -> bool,
) -> Item {
    (0..MAX_ATTEMPTS)
        .map(|attempt| {
            let mut pick = Pick::new(&[
                category,
                domain,
                &seq.to_string(),
                &index.to_string(),
                &attempt.to_string(),
            ]);
            let mut ctx = Ctx::new(&mut pick, domain, seq * count + index + attempt * 7);
            ctx.fact = fact_row(seq, index, count);
            make(&mut pick, &ctx)
        })
        .find(|item| ok(item))
        .unwrap_or_else(|| panic!("no valid {category} item for {domain}/{seq}/{index}"))
}

/// The fact-bank rows one round may use before the next round's rows begin.
const FACTS_PER_ROUND: usize = 30;

/// The fact-bank row of item `index` of request `seq` (`round * 1000 + request`, as the fake
/// server numbers them): a run's factual items ask about distinct facts while each round asks
/// for at most [`FACTS_PER_ROUND`], as assemble keeps one factual item per key.
fn fact_row(seq: usize, index: usize, count: usize) -> usize {
    (seq / 1000) * FACTS_PER_ROUND + (seq % 1000) * count + index
}

pub(super) fn gold_not_in_prompt(item: &Item) -> bool {
    !graded(&item.prompt, &item.golds)
}

/// Item `index` of the reply to request `seq` for `count` items.
pub(super) fn authored_item(
    category: &str,
    domain: &str,
    seq: usize,
    index: usize,
    count: usize,
) -> Item {
    let any = |_: &Item| true;
    match category {
        "simple_factual" => drawn(
            category,
            domain,
            seq,
            index,
            count,
            simple_factual,
            gold_not_in_prompt,
        ),
        "bloated_factual" => drawn(
            category,
            domain,
            seq,
            index,
            count,
            bloated_factual,
            gold_not_in_prompt,
        ),
        "reasoning" => drawn(
            category,
            domain,
            seq,
            index,
            count,
            reasoning,
            gold_not_in_prompt,
        ),
        "bloated_reasoning" => drawn(
            category,
            domain,
            seq,
            index,
            count,
            bloated_reasoning,
            gold_not_in_prompt,
        ),
        "technical_code" => drawn(category, domain, seq, index, count, technical_code, any),
        "long_document_qa" => drawn(category, domain, seq, index, count, long_document, any),
        "multi_document_qa" => drawn(category, domain, seq, index, count, multi_document, any),
        "conversational" => drawn(category, domain, seq, index, count, conversation, any),
        "memory_recall" => drawn(category, domain, seq, index, count, memory_recall, any),
        "memory_update" => drawn(category, domain, seq, index, count, memory_update, any),
        other => panic!("unknown category {other:?}"),
    }
}
