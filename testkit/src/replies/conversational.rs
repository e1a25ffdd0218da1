//! The fake author's conversational items: two things are named, the agent describes both, the last
//! customer line asks about "the other one"

use super::*;

pub(super) const MONTHS: &[&str] = &[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
pub(super) const WORKSPACES: &[&str] = &[
    "Atlas",
    "Borealis",
    "Cobalt",
    "Driftwood",
    "Ember",
    "Fjord",
    "Granite",
    "Harbor",
];
pub(super) const PLANS: &[&str] = &[
    "Enterprise",
    "Business",
    "Professional",
    "Growth",
    "Starter",
];
pub(super) const CARRIERS: &[&str] = &[
    "DHL Express",
    "FedEx Freight",
    "Maersk",
    "Kuehne+Nagel",
    "DB Schenker",
    "UPS Supply Chain",
];
pub(super) const REGIONS: &[&str] = &[
    "us-east-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-2",
    "ca-central-1",
    "eu-north-1",
];

pub(super) const ASIDES: &[(&str, &str)] = &[
    (
        "Is there any charge for changing that later?",
        "No, changes like that are free and take effect right away.",
    ),
    (
        "Can I see this in the admin console too?",
        "Yes, it is under Settings, in the account overview section.",
    ),
    (
        "Will my colleagues get a notification about this?",
        "Only the account administrators receive an email when something changes.",
    ),
    (
        "Is that information also in the last monthly report?",
        "It is, in the summary table on the second page of the report.",
    ),
];

pub(super) const GREETINGS_IN_CHAT: &[&str] = &[
    "",
    "Hi, this is <first>. ",
    "Hello, <first> here, from the <team>. ",
    "Good morning, I work with <first2> on the <system>. ",
];

pub(super) const ACKNOWLEDGEMENTS: &[&str] = &[
    "",
    "Thanks for reaching out! ",
    "Happy to help. ",
    "Let me pull that up for you. ",
    "Good question, I have the account open now. ",
];

pub(super) const TRANSCRIPT_HEADERS: &[&str] = &[
    "",
    "Support chat transcript, <org>:\n",
    "Ticket conversation with the <org> support desk:\n",
];

pub(super) fn spaced_region(code: &str) -> String {
    code.replace('-', " ")
}

pub(super) fn date_golds(month: &str, day: u64) -> Vec<String> {
    vec![format!("{month} {day}"), format!("{day} {month}")]
}

pub(super) fn conversation(pick: &mut Pick, ctx: &Ctx) -> Item {
    let (opening, answer, last, golds) = match ctx.turn(5) {
        0 => {
            let names = pick.distinct(2, WORKSPACES.len());
            let (a, b) = (WORKSPACES[names[0]], WORKSPACES[names[1]]);
            let plans = pick.distinct(2, PLANS.len());
            let (plan_a, plan_b) = (PLANS[plans[0]], PLANS[plans[1]]);
            let (seats_a, seats_b) = (5 * pick.between(4, 60), 5 * pick.between(61, 120));
            let (last, golds) = if pick.below(2) == 0 {
                (
                    "And how many seats does the other one have?".to_string(),
                    vec![format!("{seats_b} seats"), seats_b.to_string()],
                )
            } else {
                (
                    "Which plan is the other workspace on, then?".to_string(),
                    vec![plan_b.to_string(), format!("{plan_b} plan")],
                )
            };
            (
                either(pick,
                    format!("We have two workspaces with {}, {a} and {b}. What plan is {a} on right now?", ctx.org),
                    format!("Our company uses two {} workspaces, called {a} and {b}. Which subscription does {a} have?", ctx.org)),
                either(pick,
                    format!("{a} is on the {plan_a} plan with {seats_a} seats, and {b} is on the {plan_b} plan with {seats_b} seats."),
                    format!("I can see both. {a} has the {plan_a} plan and {seats_a} seats; {b} has the {plan_b} plan and {seats_b} seats.")),
                last,
                golds,
            )
        }
        1 => {
            let (id_a, id_b) = (pick.between(1000, 4999), pick.between(5000, 9999));
            let (cents_a, cents_b) = (
                100 * pick.between(800, 40_000),
                100 * pick.between(800, 40_000) + 50,
            );
            let months = pick.distinct(2, MONTHS.len());
            let (due_a, due_b) = (
                (MONTHS[months[0]], pick.between(1, 28)),
                (MONTHS[months[1]], pick.between(1, 28)),
            );
            let (last, golds) = if pick.below(2) == 0 {
                (
                    "When is the other one due?".to_string(),
                    date_golds(due_b.0, due_b.1),
                )
            } else {
                (
                    "What is the amount on the other one?".to_string(),
                    money_golds(cents_b),
                )
            };
            (
                either(pick,
                    format!("I'm looking at invoices INV-{id_a} and INV-{id_b} from {}. What's the total on INV-{id_a}?", ctx.org),
                    format!("Our accounts payable team received INV-{id_a} and INV-{id_b} for the {}. How much is INV-{id_a}?", ctx.system)),
                format!("INV-{id_a} is for ${} and is due on {} {}. INV-{id_b} is for ${}, due on {} {}.", dollars_text(cents_a), due_a.0, due_a.1, dollars_text(cents_b), due_b.0, due_b.1),
                last,
                golds,
            )
        }
        2 => {
            let (id_a, id_b) = (pick.between(10_000, 49_999), pick.between(50_000, 99_999));
            let carriers = pick.distinct(2, CARRIERS.len());
            let (carrier_a, carrier_b) = (CARRIERS[carriers[0]], CARRIERS[carriers[1]]);
            let days = pick.distinct(2, WEEKDAYS.len());
            let (eta_a, eta_b) = (WEEKDAYS[days[0]], WEEKDAYS[days[1]]);
            let (last, golds) = if pick.below(2) == 0 {
                (
                    "And the other one, which carrier has it?".to_string(),
                    vec![carrier_b.to_string()],
                )
            } else {
                (
                    "When should the second one arrive?".to_string(),
                    vec![eta_b.to_string(), format!("on {eta_b}")],
                )
            };
            (
                either(pick,
                    format!("Can you check shipments SHP-{id_a} and SHP-{id_b} for us? Which carrier is handling SHP-{id_a}?"),
                    format!("Two of our {} shipments, SHP-{id_a} and SHP-{id_b}, are late. Who is carrying SHP-{id_a}?", ctx.org)),
                format!("SHP-{id_a} is with {carrier_a} and should arrive on {eta_a}; SHP-{id_b} went with {carrier_b} and is due on {eta_b}."),
                last,
                golds,
            )
        }
        3 => {
            let regions = pick.distinct(2, REGIONS.len());
            let (region_a, region_b) = (REGIONS[regions[0]], REGIONS[regions[1]]);
            let (a, b) = (
                format!("{}-primary", ctx.service),
                format!("{}-standby", ctx.service),
            );
            (
                either(pick,
                    format!("We run two clusters for {}: {a} and {b}. Which region hosts {a}?", ctx.service),
                    format!("The {} depends on two clusters, {a} and {b}. Where is {a} deployed?", ctx.system)),
                format!("{a} runs in {region_a} and {b} runs in {region_b}; both are on the same Kubernetes minor version."),
                "And where is the other one?".to_string(),
                vec![region_b.to_string(), spaced_region(region_b)],
            )
        }
        _ => {
            let months = pick.distinct(2, MONTHS.len());
            let (date_a, date_b) = (
                (MONTHS[months[0]], pick.between(1, 28)),
                (MONTHS[months[1]], pick.between(1, 28)),
            );
            (
                either(pick,
                    format!("Our {} has two API keys with you, the reporting key and the ingestion key. When does the reporting key expire?", ctx.team),
                    format!("The {} calls your API with two keys: one for reporting, one for ingestion. What's the expiry date of the reporting key?", ctx.system)),
                either(pick,
                    format!("The reporting key expires on {} {} and the ingestion key expires on {} {}. You can rotate either one from the console.", date_a.0, date_a.1, date_b.0, date_b.1),
                    format!("The reporting key is valid until {} {}, and the ingestion key until {} {}. Rotating a key early does not change your plan.", date_a.0, date_a.1, date_b.0, date_b.1)),
                "What about the other one, when does it expire?".to_string(),
                date_golds(date_b.0, date_b.1),
            )
        }
    };
    let greeting = ctx.fill(pick.one(GREETINGS_IN_CHAT));
    let acknowledgement = ctx.fill(pick.one(ACKNOWLEDGEMENTS));
    let mut lines = vec![
        format!("Customer: {greeting}{opening}"),
        format!("Agent: {acknowledgement}{answer}"),
    ];
    let asides = pick.below(3);
    for aside in pick.distinct(asides, ASIDES.len()) {
        let (question, reply) = ASIDES[aside];
        lines.push(format!("Customer: {question}"));
        lines.push(format!("Agent: {reply}"));
    }
    let lead_in = pick.one(&[
        "",
        "Thanks. ",
        "Got it. ",
        "Perfect. ",
        "OK, one last thing. ",
    ]);
    lines.push(format!("Customer: {lead_in}{last}"));
    let header = ctx.fill(pick.one(TRANSCRIPT_HEADERS));
    Item::plain(format!("{header}{}", lines.join("\n")), golds)
}
