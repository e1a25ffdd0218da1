//! The fake author's long_document_qa items: policies, postmortems, SOWs, RFCs and SLAs of
//! 250–450 words.

use super::*;

/// A document before assembly: mandatory paragraphs (which hold every asked fact), optional
/// paragraphs added until the document is long enough, and the questions it can answer.
pub(super) struct Document {
    pub(super) title: String,
    pub(super) paragraphs: Vec<String>,
    pub(super) optional: Vec<String>,
    pub(super) questions: Vec<(String, Vec<String>)>,
}

pub(super) const DOCUMENT_MIN_WORDS: usize = 300;

/// Remarks appended to some paragraphs so that two documents of one kind read differently. They
/// name no person a question asks about.
pub(super) const REMARKS: &[&str] = &[
    "Questions about this section go to the <team>.",
    "This reflects the state of the <system> at the time of writing.",
    "Related material is linked from the <org> intranet page for <svc>.",
    "The <team> will revisit this section at the next review.",
    "Terms not defined here follow the <org> glossary.",
    "The figures in this section were checked by <name3> against the source systems.",
    "Feedback from the <org> customer advisory board shaped this section.",
    "This section applies equally to the disaster recovery copy of the <system>.",
    "Wording here was aligned with the <org> style guide in the last revision.",
    "Links to the relevant dashboards for <svc> are kept in the team wiki.",
    "<name3> is the contact for questions about this part.",
    "Nothing in this section changes the obligations in existing customer contracts.",
];

/// Word pairs swapped per document (each pair in one direction or not at all), so that two
/// documents built from the same paragraph variants still read differently. None of them occurs
/// in a gold.
pub(super) const SYNONYMS: &[(&str, &str)] = &[
    ("vendor", "supplier"),
    ("client", "customer"),
    ("customers", "clients"),
    ("must", "shall"),
    ("review", "assessment"),
    ("approved", "signed off"),
    ("requests", "calls"),
    ("automatically", "without manual intervention"),
    ("team", "group"),
    ("changes", "modifications"),
    ("staff", "personnel"),
    ("timeline", "schedule"),
    ("progress", "status"),
    ("errors", "failures"),
    ("regulations", "rules"),
    ("deleted", "removed"),
    ("kept", "retained"),
    ("outage", "disruption"),
];

/// `text` with every whole-word, lower-case `from` replaced by `to`.
pub(super) fn replace_word(text: &str, from: &str, to: &str) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + from.len()..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(is_word) || after.is_some_and(is_word) {
            out.push_str(from);
        } else {
            out.push_str(to);
        }
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}

pub(super) fn paraphrased(pick: &mut Pick, text: &str) -> String {
    let mut text = text.to_string();
    for (first, second) in SYNONYMS {
        match pick.below(3) {
            0 => text = replace_word(&text, first, second),
            1 => text = replace_word(&text, second, first),
            _ => {}
        }
    }
    text
}

pub(super) fn long_document(pick: &mut Pick, ctx: &Ctx) -> Item {
    let mut document = any_document(pick, ctx);
    let remarks = pick.distinct(4, REMARKS.len());
    let paragraphs = pick.distinct(4, document.paragraphs.len());
    for (paragraph, remark) in paragraphs.into_iter().zip(remarks) {
        let text = ctx.fill(REMARKS[remark]);
        if let Some(target) = document.paragraphs.get_mut(paragraph) {
            target.push(' ');
            target.push_str(&text);
        }
    }
    let (question, golds) = pick.item(&document.questions).clone();
    let body = paraphrased(pick, &document_body(&document, document.paragraphs.len()));
    Item::plain(format!("{body}\n\nQuestion: {question}"), golds)
}

pub(super) fn any_document(pick: &mut Pick, ctx: &Ctx) -> Document {
    match ctx.turn(5) {
        0 => postmortem(pick, ctx),
        1 => retention_policy(pick, ctx),
        2 => statement_of_work(pick, ctx),
        3 => rfc(pick, ctx),
        _ => sla_document(pick, ctx),
    }
}

/// The title, the first `mandatory` paragraphs, and optional paragraphs until the minimum length.
pub(super) fn document_body(document: &Document, mandatory: usize) -> String {
    let mut parts = vec![document.title.clone()];
    parts.extend(document.paragraphs.iter().take(mandatory).cloned());
    for extra in &document.optional {
        if mandatory < document.paragraphs.len() || words(&parts.join(" ")) >= DOCUMENT_MIN_WORDS {
            break;
        }
        parts.push(extra.clone());
    }
    parts.join("\n\n")
}

pub(super) fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// One of two variants of a paragraph.
pub(super) fn either(pick: &mut Pick, first: String, second: String) -> String {
    if pick.below(2) == 0 {
        first
    } else {
        second
    }
}

pub(super) fn shuffled<T>(pick: &mut Pick, mut items: Vec<T>) -> Vec<T> {
    for i in (1..items.len()).rev() {
        items.swap(i, pick.below(i + 1));
    }
    items
}

pub(super) const SETTINGS: &[&str] = &[
    "max_pool_size",
    "request_timeout_ms",
    "worker_concurrency",
    "retry_budget",
    "queue_capacity",
    "connection_limit",
];

pub(super) fn postmortem(pick: &mut Pick, ctx: &Ctx) -> Document {
    let minutes = pick.between(20, 180);
    let failed = pick.between(5, 60);
    let affected = pick.between(40, 900);
    let detect = pick.between(3, 15);
    let setting = pick.one(SETTINGS);
    let weekday = pick.one(WEEKDAYS);
    let commander = ctx.person(0).full();
    let owner = ctx.person(1).full();
    let paragraphs = vec![
        either(pick,
            format!("Summary. On {weekday}, the {} returned elevated errors for {minutes} minutes. At the worst point, {failed}% of requests failed, and {affected} enterprise customers opened support cases. The incident was declared at severity two because no data was lost, but several downstream integrations retried aggressively and prolonged the recovery.", ctx.system),
            format!("Summary. For {minutes} minutes on {weekday}, customers of {} saw failed or slow responses from the {}. Error rates peaked at {failed}% of all requests. In total {affected} customer accounts were affected, most of them during the morning batch window when integration traffic is highest.", ctx.org, ctx.system)),
        either(pick,
            format!("Detection and timeline. Synthetic checks alerted the on-call engineer {detect} minutes after the first failed request. {commander} took the role of incident commander, opened the bridge, and paged the {}. Rolling back the most recent configuration change restored service; the remaining time was spent draining retry queues and confirming that error rates had returned to baseline.", ctx.team),
            format!("Timeline. The first alert fired {detect} minutes after errors began, when the error-rate monitor crossed its threshold. {commander} acted as incident commander and coordinated the response from the incident channel. Engineers first suspected the database, which cost time, before the configuration history pointed to the real trigger. A rollback ended the customer impact.")),
        either(pick,
            format!("Root cause. A configuration change lowered the {setting} value for the {} service from its tested default. Under normal load the new value was harmless, but during the morning peak the service exhausted its capacity and began rejecting work. The change had passed review because the pull request did not show the load profile it would face in production.", ctx.service),
            format!("Root cause. The trigger was an edit to {setting} in the shared configuration of {}, shipped as part of an unrelated cleanup. Canary analysis compared only latency, not error rates, so the canary passed and the change reached every region within an hour. Once the peak arrived, requests queued behind the new limit and timed out.", ctx.service)),
        either(pick,
            "Customer impact. Affected customers saw timeouts in the web console and failed API calls from their integrations. Customer success teams contacted the largest accounts directly, and the status page was updated every thirty minutes until recovery. No data was lost or corrupted, and queued work was processed once the service recovered.".to_string(),
            "Communication. The status page acknowledged the incident shortly after the bridge opened and posted regular updates. Account managers for strategic customers sent direct notes, and support prepared a macro for incoming tickets. Billing confirmed that the outage falls within the service credit terms for the affected subscriptions.".to_string()),
        either(pick,
            format!("Action items. First, add error-rate comparison to canary analysis for {}. Second, require a load-test link on any pull request that changes {setting} or similar capacity limits. Third, teach the retry library in customer-facing SDKs to back off exponentially. {owner} owns the follow-up review in two weeks.", ctx.service),
            format!("Follow-up. The {} will move capacity settings such as {setting} behind a validated schema, add alerts on queue depth, and run a game day that replays the morning peak against staging. {owner} is tracking these items and will report progress at the next operations review.", ctx.team)),
    ];
    Document {
        title: format!("Postmortem: {} degradation at {}", ctx.system, ctx.org),
        paragraphs,
        optional: shuffled(pick, vec![
            "Lessons learned. The team noted that the configuration history was the fastest route to the cause, yet it was checked last. Runbooks will now list recent changes as the first diagnostic step, ahead of infrastructure dashboards.".to_string(),
            "What went well. Paging worked as designed, the incident channel stayed focused, and the rollback procedure completed without manual steps. Customer-facing teams had accurate information throughout, which reduced duplicate tickets.".to_string(),
            format!("Document status. This postmortem follows the blameless format used across {}. It was reviewed by the {} and by customer support leadership before publication.", ctx.org, ctx.team),
        ]),
        questions: vec![
            ("How many minutes did the customer-facing impact last?".to_string(), vec![format!("{minutes} minutes"), format!("{minutes} min")]),
            ("Who served as incident commander?".to_string(), ctx.person(0).golds()),
            ("Which configuration setting triggered the incident?".to_string(), vec![setting.to_string()]),
            ("What percentage of requests failed at the worst point?".to_string(), vec![format!("{failed}%"), format!("{failed} percent")]),
        ],
    }
}

pub(super) fn retention_policy(pick: &mut Pick, ctx: &Ctx) -> Document {
    let audit = pick.one(&[90_u64, 180, 365, 400, 730]);
    let backup = pick.between(14, 45);
    let deletion = pick.between(5, 30);
    let owner = ctx.person(0).full();
    let approver = ctx.person(1).full();
    let paragraphs = vec![
        either(pick,
            format!("Purpose and scope. This policy defines how long records produced by the {} are kept, where they are stored, and how they are deleted. It applies to every environment operated by {}, including staging copies that contain production data, and to all vendors that process these records on our behalf.", ctx.system, ctx.org),
            format!("Scope. The rules below cover application records, audit trails, and backups created by the {} and by the {} service that feeds it. They apply to employees, contractors, and processors acting for {}. Where a customer contract sets a shorter period, the contract takes precedence.", ctx.system, ctx.service, ctx.org)),
        either(pick,
            format!("Retention schedule. Audit logs are retained for {audit} days in write-once storage so that investigators can reconstruct access history. Operational logs are kept for a shorter period and may be sampled. Database backups are kept for {backup} days and are encrypted with keys managed by the security team; older backups are destroyed automatically."),
            format!("Retention periods. Backups of the {} database are kept for {backup} days. Audit logs, which record every administrative action and every access to customer records, are retained for {audit} days. Debug logs are never retained beyond what is needed to resolve the incident that produced them.", ctx.system)),
        either(pick,
            format!("Deletion requests. When a customer or data subject asks for deletion, the request is logged in the privacy queue and must be completed within {deletion} business days. Records under legal hold are excluded until the hold is lifted. Completion is confirmed in writing, and the ticket records which systems were purged."),
            format!("Handling deletion requests. Verified requests to erase personal data are completed within {deletion} business days of verification. The {} runs the purge job, checks the replicas, and records the outcome in the ticket. Backups age out on their normal schedule rather than being edited.", ctx.team)),
        either(pick,
            "Exceptions. Any deviation from these periods needs written approval from the policy owner and a documented business reason. Exceptions are reviewed every quarter and expire automatically after one year unless they are renewed by the same process.".to_string(),
            format!("Legal hold. When litigation or a regulatory inquiry is expected, legal counsel may suspend deletion for specific records. The hold notice names the affected systems, and the {} confirms in writing that automated deletion has been paused.", ctx.team)),
        either(pick,
            format!("Ownership and review. {owner} owns this policy and reviews it every twelve months, or sooner when regulations change. Questions should go to the privacy office. {approver} approved the current revision on behalf of the risk committee."),
            format!("Roles. The policy owner is {owner}, who is accountable for keeping the schedule current. {approver} signs off on every revision for the risk committee, and system owners confirm compliance for their services during the annual review.")),
    ];
    Document {
        title: format!("{} Data Retention Policy for the {}", ctx.org, ctx.system),
        paragraphs,
        optional: shuffled(pick, vec![
            "Storage locations. Records are stored only in the regions named in the customer's order form. Copies made for analytics must be pseudonymised, and any export to a personal device is prohibited.".to_string(),
            "Enforcement. Violations of this policy are handled under the information security standard and may lead to disciplinary action. Automated checks compare configured retention settings with this schedule and raise a ticket for any drift.".to_string(),
            "Definitions. An audit log is an append-only record of who did what and when. A backup is a point-in-time copy kept for recovery. A data subject is any person whose personal data the system processes.".to_string(),
        ]),
        questions: vec![
            ("How many days are audit logs retained?".to_string(), vec![format!("{audit} days"), format!("{audit}-day")]),
            ("For how long are database backups kept?".to_string(), vec![format!("{backup} days")]),
            ("Within how many business days must a verified deletion request be completed?".to_string(), vec![format!("{deletion} business days"), format!("{deletion} days")]),
            ("Who owns this policy?".to_string(), ctx.person(0).golds()),
        ],
    }
}

pub(super) const VENDORS: &[&str] = &[
    "Brightpath Consulting",
    "Northgate Advisory",
    "Summit Systems Integration",
    "Lattice Digital",
    "Keel Partners",
    "Foundry Lane Engineering",
];

pub(super) fn statement_of_work(pick: &mut Pick, ctx: &Ctx) -> Document {
    let fee = 1000 * pick.between(60, 400);
    let weeks = pick.between(8, 26);
    let acceptance = pick.between(5, 15);
    let vendor = pick.one(VENDORS);
    let lead = ctx.person(0).full();
    let sponsor = ctx.person(1).full();
    let paragraphs = vec![
        either(pick,
            format!("Background. {} engages {vendor} to modernise the {}, which has grown around a monolithic code base that is hard to change safely. This statement of work describes the scope, schedule, fees, and acceptance process for the engagement and is governed by the master services agreement between the parties.", ctx.org, ctx.system),
            format!("Parties and purpose. This statement of work is entered into by {} and {vendor} under their existing master services agreement. Its purpose is to move the {} onto a supported platform, retire manual deployment steps, and hand over a maintainable service to the {}.", ctx.org, ctx.system, ctx.team)),
        either(pick,
            format!("Scope. The vendor will assess the current architecture, extract the {} component into an independently deployable service, automate its build and release pipeline, and migrate production traffic with no scheduled downtime. Data migration tooling, runbooks, and a knowledge transfer programme for the {} are included. Changes to third-party systems are out of scope.", ctx.service, ctx.team),
            format!("In scope. Discovery workshops, a target architecture, the re-platforming of {}, automated tests for the critical paths, and a production cutover runbook are all in scope. Out of scope are licence costs, changes to upstream partner systems, and any work on the mobile applications.", ctx.service)),
        either(pick,
            format!("Schedule. The engagement runs for {weeks} weeks from the kickoff date. Discovery occupies the opening phase, followed by build sprints and a controlled cutover. The vendor's project lead, {lead}, reports progress weekly to the client sponsor, {sponsor}, and escalates risks that threaten the timeline."),
            format!("Timeline and governance. The work is expected to take {weeks} weeks. {lead} leads the vendor team and is the single point of contact for delivery questions, while {sponsor} acts as sponsor for {} and chairs the fortnightly steering meeting.", ctx.org)),
        either(pick,
            format!("Fees. The work is delivered for a fixed fee of ${}, invoiced in equal instalments at the completion of each milestone. Travel expenses are billed at cost, and only when they were approved in writing beforehand. Payment terms follow the master services agreement.", grouped(fee)),
            format!("Commercials. {} will pay {vendor} a fixed fee of ${} for the scope described here. Invoices are raised when the client accepts each milestone, and any change request that alters scope must be priced and signed before work starts.", ctx.org, grouped(fee))),
        either(pick,
            format!("Acceptance. Each deliverable is submitted with evidence that it meets its acceptance criteria. The client has {acceptance} business days to accept it or to list specific defects; silence after that window counts as acceptance. Defects are fixed at the vendor's cost."),
            format!("Acceptance process. After a milestone is delivered, {} reviews it against the agreed criteria and must respond within {acceptance} business days. Rejected items return to the vendor with written reasons, and the review window restarts when the fix is delivered.", ctx.org)),
    ];
    Document {
        title: format!("Statement of Work: {} modernisation for {}", ctx.system, ctx.org),
        paragraphs,
        optional: shuffled(pick, vec![
            "Assumptions. The client provides timely access to environments, subject-matter experts, and existing documentation. Delays caused by missing access extend the schedule by the same amount without penalty to either party.".to_string(),
            "Staffing. The vendor assigns a project lead, two senior engineers, and a quality engineer for the full engagement, plus an architect during discovery. Replacing named staff requires the client's consent, which will not be unreasonably withheld.".to_string(),
            format!("Confidentiality. All client data accessed during the engagement remains the property of {} and is handled under the confidentiality terms of the master services agreement.", ctx.org),
        ]),
        questions: vec![
            ("What is the total fixed fee for the engagement?".to_string(), money_golds(fee * 100)),
            ("How many weeks is the engagement expected to last?".to_string(), vec![format!("{weeks} weeks")]),
            ("Who is the vendor's project lead?".to_string(), ctx.person(0).golds()),
            ("How many business days does the client have to accept a deliverable?".to_string(), vec![format!("{acceptance} business days"), format!("{acceptance} days")]),
        ],
    }
}

pub(super) const LIMITERS: &[&str] = &[
    "token bucket",
    "leaky bucket",
    "fixed window counter",
    "sliding window log",
];

pub(super) fn rfc(pick: &mut Pick, ctx: &Ctx) -> Document {
    let order = pick.distinct(3, LIMITERS.len());
    let (chosen, first_alt, second_alt) =
        (LIMITERS[order[0]], LIMITERS[order[1]], LIMITERS[order[2]]);
    let overhead = 5 * pick.between(2, 30);
    let author = ctx.person(0).full();
    let reviewer = ctx.person(1).full();
    let paragraphs = vec![
        either(pick,
            format!("Context. The {} has no consistent protection against traffic bursts. During recent incidents, a single integration partner sent enough requests to starve every other tenant. This RFC, written by {author}, proposes a shared rate limiter in front of {} and asks the {} for review.", ctx.system, ctx.service, ctx.team),
            format!("Problem statement. Today each endpoint of {} implements its own ad hoc throttling, and none of it is tenant-aware. Bursty clients degrade latency for everyone, and support cannot explain to customers why their calls fail. {author} wrote this proposal after the last quarterly review of the {}.", ctx.service, ctx.system)),
        either(pick,
            format!("Options considered. We compared a {first_alt}, a {second_alt}, and a {chosen}. The {first_alt} is simple to operate but handles our bursty traffic poorly. The {second_alt} needs more state per tenant than the gateway can afford. The {chosen} allows bounded bursts while enforcing a long-run average, and it maps cleanly onto per-tenant quotas."),
            format!("Alternatives. A {first_alt} was rejected because it behaves badly when many tenants burst at once. A {second_alt} was rejected because of its memory cost at the gateway. We therefore choose a {chosen}, implemented in the shared gateway so that every endpoint benefits without code changes.")),
        either(pick,
            format!("Design. Limits are defined per tenant and per endpoint class, stored in the configuration service, and cached at the gateway for sixty seconds. Rejected requests receive a clear error with a retry hint. The limiter may add at most {overhead} ms to p99 latency, which is the budget this RFC sets for the gateway path."),
            format!("Proposed design. The gateway keeps counters in a regional cache and falls back to a conservative local limit if the cache is unreachable. Tenants can see their remaining quota in response headers. The target is that rate limiting adds no more than {overhead} ms at p99, measured at the gateway.")),
        either(pick,
            format!("Rollout. The limiter ships in observe-only mode first, logging what it would have rejected. After a week of data, it is enforced for internal tenants, then for a tenth of external traffic, and finally for everyone. Each step needs sign-off from {reviewer}, who owns the gateway."),
            format!("Rollout and ownership. {reviewer} owns the gateway and will approve each stage of the rollout. Enforcement starts in shadow mode, continues with internal tenants, and then expands region by region. A kill switch disables enforcement within minutes if error rates rise.")),
        either(pick,
            "Open questions. Should enterprise contracts be able to buy higher limits, and if so, who approves them? How should limits apply to batch exports that legitimately run for hours? Reviewers are asked to comment within two weeks.".to_string(),
            "Risks. Misconfigured limits could reject legitimate traffic, so limits start generous and are tightened with data. The cache adds a dependency, mitigated by the local fallback. Reviewers should focus on the quota model and the error contract.".to_string()),
    ];
    Document {
        title: format!("RFC: Rate limiting for the {}", ctx.system),
        paragraphs,
        optional: shuffled(pick, vec![
            "Non-goals. This RFC does not address authentication, abuse detection, or billing for overage. Those topics are covered by separate proposals from the identity and billing teams.".to_string(),
            "Metrics. Success means fewer cross-tenant incidents, a stable tail latency at the gateway, and a measurable drop in support tickets about unexplained throttling.".to_string(),
            format!("Status. This document is under review by the {}. Comments should be left inline, and decisions will be recorded at the end of the review period.", ctx.team),
        ]),
        questions: vec![
            ("Which rate-limiting algorithm does the RFC choose?".to_string(), vec![chosen.to_string()]),
            ("How much latency may the limiter add at p99?".to_string(), vec![format!("{overhead} ms"), format!("{overhead} milliseconds")]),
            ("Who owns the gateway and approves each rollout stage?".to_string(), ctx.person(1).golds()),
            ("Who wrote this RFC?".to_string(), ctx.person(0).golds()),
        ],
    }
}

pub(super) fn sla_document(pick: &mut Pick, ctx: &Ctx) -> Document {
    let uptime = pick.one(&["99.5", "99.9", "99.95", "99.99"]);
    let credit = 5 * pick.between(1, 6);
    let response = 15 * pick.between(1, 4);
    let claim = pick.one(&[30_u64, 45, 60]);
    let manager = ctx.person(0).full();
    let paragraphs = vec![
        either(pick,
            format!("Scope. This agreement sets the service levels that {} commits to for the {} and the remedies available when those levels are missed. It forms part of the customer's subscription agreement and applies to production environments only; sandbox and trial environments receive no service commitment.", ctx.org, ctx.system),
            format!("Introduction. {} provides the {} as a hosted service. This document defines how availability is measured, how quickly support responds, and what service credits customers receive if commitments are not met. It does not cover features labelled as preview.", ctx.org, ctx.system)),
        either(pick,
            format!("Availability commitment. The {} will be available {uptime}% of the time in each calendar month, measured by external probes every minute from three regions. Scheduled maintenance announced at least five days ahead is excluded, as are outages caused by the customer's own systems.", ctx.system),
            format!("Uptime. {} commits to monthly availability of {uptime}%. A minute counts as unavailable when more than half of the probe requests fail. Planned maintenance is excluded when it is announced in advance and performed inside the published window.", ctx.org)),
        either(pick,
            format!("Service credits. If availability falls below the commitment in a month, the customer receives a credit of {credit}% of that month's fees for the affected service. Larger credits apply to deeper shortfalls as set out in the order form. Credits are the customer's sole remedy for missed availability."),
            format!("Remedies. A missed availability commitment entitles the customer to a service credit equal to {credit}% of the monthly fee for the {}. Credits are applied to the next invoice and cannot be exchanged for cash.", ctx.system)),
        either(pick,
            format!("Support response. Severity one incidents, meaning a production outage with no workaround, receive a first response within {response} minutes at any hour. Lower severities are answered during business hours. Response means a qualified engineer is working on the case, not an automated acknowledgement."),
            format!("Support. For a full production outage the support team responds within {response} minutes, around the clock, and provides updates until the issue is resolved. Degraded service and general questions follow the business-hours targets listed in the support guide.")),
        either(pick,
            format!("Claiming credits. The customer must submit a credit claim within {claim} days after the end of the affected month, with the dates and times of the outage. {manager}, the service delivery manager, confirms eligible claims against monitoring data."),
            format!("Claims process. Requests for service credits must reach {} within {claim} days of the month in which the shortfall occurred. {manager} reviews each claim and responds with the measured availability for the period.", ctx.org)),
    ];
    Document {
        title: format!("Service Level Agreement: {} ({})", ctx.system, ctx.org),
        paragraphs,
        optional: shuffled(pick, vec![
            "Exclusions. The commitments do not apply to failures caused by force majeure, by the customer's misuse of the service, or by third-party networks outside the provider's control.".to_string(),
            "Reporting. Monthly availability reports are published in the customer portal, together with incident summaries for any outage that lasted longer than a few minutes.".to_string(),
            "Changes. The provider may update this agreement with notice, but no change will reduce the commitments during the customer's current subscription term.".to_string(),
        ]),
        questions: vec![
            ("What monthly availability does the provider commit to?".to_string(), vec![format!("{uptime}%"), uptime.to_string()]),
            ("What service credit applies when availability falls below the commitment?".to_string(), vec![format!("{credit}%"), format!("{credit} percent")]),
            ("How quickly must support respond to a severity one incident?".to_string(), vec![format!("{response} minutes")]),
            ("Within how many days after the affected month must a credit claim be submitted?".to_string(), vec![format!("{claim} days")]),
            ("Who confirms eligible credit claims?".to_string(), ctx.person(0).golds()),
        ],
    }
}
