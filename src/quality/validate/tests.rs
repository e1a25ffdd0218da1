//! The validator's rules one by one: each reason code, with items that fail it and items
//! that pass.

use super::*;
use serde_json::json;

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}

fn item(prompt: &str, golds: &[&str]) -> ItemFields {
    ItemFields {
        prompt: prompt.to_string(),
        golds: strings(golds),
        durable: None,
        stale: None,
    }
}

fn memory(prompt: &str, golds: &[&str], durable: &[&str], stale: &[&str]) -> ItemFields {
    ItemFields {
        durable: Some(strings(durable)),
        stale: Some(strings(stale)),
        ..item(prompt, golds)
    }
}

/// The golds the gate keeps for `item`, or why it refuses it.
fn kept_golds(category: Category, item: ItemFields) -> Result<Vec<String>, Rejection> {
    check_item(category, item, &Rules::default()).map(|kept| kept.item.golds)
}

fn outcome(category: Category, item: &ItemFields) -> &'static str {
    check_item(category, item.clone(), &Rules::default()).map_or_else(|r| r.reason.code(), |_| "ok")
}

fn golds_outcome(golds: &[&str]) -> &'static str {
    outcome(
        Category::TechnicalCode,
        &item(
            "Which value does the audit log retention setting use by default?",
            golds,
        ),
    )
}

/// The golds dropped from the golds-only item of `golds`, or its reject code.
fn dropped_golds(golds: &[&str]) -> Result<Vec<String>, &'static str> {
    dropped_golds_of(
        Category::TechnicalCode,
        "Which value does the audit log retention setting use by default?",
        golds,
    )
}

fn dropped_golds_of(
    category: Category,
    prompt: &str,
    golds: &[&str],
) -> Result<Vec<String>, &'static str> {
    check_item(category, item(prompt, golds), &Rules::default())
        .map(|kept| kept.dropped.into_iter().map(|d| d.gold).collect())
        .map_err(|r| r.reason.code())
}

fn words(n: usize, word: &str) -> String {
    vec![word; n].join(" ")
}

fn document(words_in_doc: usize) -> String {
    format!(
        "Retention policy. Audit logs are kept for 400 days. {}\n\nQuestion: How long are audit logs kept?",
        words(words_in_doc - 9, "filler")
    )
}

const SNIPPETS: &str =
    "[Doc 1] EU retention\nEU audit logs are kept for 400 days under the approved \
    standard, which the governance board signed off in March.\n\
    [Doc 2] US retention\nUS audit logs are kept for 90 days, as the regional policy for the \
    United States clusters requires.\n\
    [Doc 3] Backups\nBackups run nightly at 02:00 UTC and are copied to a second region.\n\
    [Doc 4] Archive\nArchives move to cold storage after one year and stay there for seven.\n\n\
    Question: How long are EU audit logs kept?";

const DIALOG: &str =
    "Customer: We run two workspaces, Atlas and Borealis. What plan is Atlas on?\n\
    Agent: Atlas is on Enterprise with 250 seats; Borealis is on Team with 40 seats.\n\
    Customer: And how many seats does the other one have?";

const MEMORY: &str = "Memory:\n- owner: Priya Raman\n- plan: Enterprise\n- region: eu-central-1\n\
    - sso_provider: Okta\n\nQuestion: Which identity provider does the account use for SSO?";

const UPDATE: &str =
    "The security policy previously required Kubernetes clusters to use version 1.22. \
    A recent update mandates a minimum version of 1.25. What is the current minimum version?";

#[test]
fn every_reason_has_a_unique_snake_case_code_and_a_meaning() {
    let codes: Vec<&str> = Reason::all().iter().map(Reason::code).collect();
    let mut unique = codes.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), codes.len());
    for reason in Reason::all() {
        assert!(reason
            .code()
            .chars()
            .all(|c| c.is_ascii_lowercase() || c == '_'));
        assert!(!reason.meaning().is_empty());
    }
}

#[test]
fn rejection_displays_code_and_detail() {
    let rejection = check_item(
        Category::SimpleFactual,
        item("Which port does PostgreSQL listen on by default?", &[]),
        &Rules::default(),
    )
    .unwrap_err();
    assert_eq!(rejection.to_string(), "empty_golds: `golds` is empty");
}

#[test]
fn word_count_splits_on_any_whitespace() {
    assert_eq!(word_count(" a  b\tc\nd "), 4);
    assert_eq!(word_count(""), 0);
}

#[test]
fn fields_from_value_reads_required_fields() {
    let value =
        json!({"prompt": "Q?", "golds": ["a", "b"], "durable": ["a"], "stale": [], "note": 1});
    let fields = fields_from_value(Category::MemoryRecall, &value).unwrap();
    assert_eq!(fields, memory("Q?", &["a", "b"], &["a"], &[]));
}

#[test]
fn fields_from_value_ignores_memory_fields_outside_memory_categories() {
    let value = json!({"prompt": "Q?", "golds": ["a"], "durable": ["a"], "stale": 5});
    let fields = fields_from_value(Category::SimpleFactual, &value).unwrap();
    assert_eq!(fields, item("Q?", &["a"]));
}

#[test]
fn fields_from_value_missing_field() {
    for value in [
        json!({"golds": ["a"]}),
        json!({"prompt": "Q?"}),
        json!({"prompt": null, "golds": ["a"]}),
    ] {
        let rejection = fields_from_value(Category::SimpleFactual, &value).unwrap_err();
        assert_eq!(rejection.reason, Reason::MissingField, "{value}");
    }
}

#[test]
fn fields_from_value_wrong_type() {
    let cases = [
        json!("a string item"),
        json!({"prompt": 3, "golds": ["a"]}),
        json!({"prompt": "Q?", "golds": "a"}),
        json!({"prompt": "Q?", "golds": ["a", 1.25]}),
        json!({"prompt": "Q?", "golds": ["a"], "durable": "a"}),
        json!({"prompt": "Q?", "golds": ["a"], "stale": [null]}),
    ];
    for value in cases {
        let rejection = fields_from_value(Category::MemoryUpdate, &value).unwrap_err();
        assert_eq!(rejection.reason, Reason::WrongType, "{value}");
    }
}

#[test]
fn empty_prompt() {
    assert_eq!(
        outcome(Category::SimpleFactual, &item(" \n", &["5432"])),
        "empty_prompt"
    );
    assert_eq!(
        outcome(
            Category::SimpleFactual,
            &item(
                "Which port does PostgreSQL listen on by default?",
                &["5432"]
            )
        ),
        "ok"
    );
}

#[test]
fn empty_golds() {
    assert_eq!(golds_outcome(&[]), "empty_golds");
    assert_eq!(golds_outcome(&["x86"]), "ok");
}

#[test]
fn gold_blank() {
    assert_eq!(golds_outcome(&["$", "—"]), "gold_blank");
    assert_eq!(golds_outcome(&["$5"]), "ok");
}

#[test]
fn gold_too_long() {
    assert_eq!(
        golds_outcome(&["the retention is 400 days"]),
        "gold_too_long"
    );
    assert_eq!(golds_outcome(&["retention of 400 days"]), "ok");
    let lenient = Rules {
        max_gold_words: 5,
        ..Rules::default()
    };
    assert!(check_item(
        Category::TechnicalCode,
        item(
            "Which retention applies to the audit logs by default?",
            &["the retention is 400 days"]
        ),
        &lenient
    )
    .is_ok());
}

#[test]
fn golds_that_are_variants_of_one_answer_pass() {
    let variants: &[&[&str]] = &[
        &["1.25", "version 1.25", "kubernetes 1.25"],
        &["$1,250", "1250 USD"],
        &["PostgreSQL", "Postgres"],
        &["us-east-1", "us east 1"],
        &["43.2", "43.2 minutes"],
        &["$1,234.50", "1234.5"],
        &["1.2M", "1,200,000"],
        &["Priya Raman", "Raman"],
        &["TLS 1.3", "TLSv1.3"],
        &["DaemonSet", "daemon set"],
        &["v2.3.1", "release 2.3.1"],
        &["15:30 ET", "15:30", "3:30 pm"],
        &["17:00", "5 p.m."],
        &["10%", "0.1", "10 percent"],
        &["AAAA", "AAAA record", "quad-A record"],
        &["72 hours", "3 days", "72h"],
        &["18 months", "1.5 years"],
    ];
    for golds in variants {
        assert_eq!(dropped_golds(golds), Ok(Vec::new()), "{golds:?}");
    }
}

#[test]
fn a_doubtful_variant_is_dropped_and_the_item_kept_with_its_key() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["15:30", "3:30"], &["3:30"]),
        (&["429", "Too Many Requests"], &["Too Many Requests"]),
        (&["30 days", "30", "1 month"], &["30", "1 month"]),
        (&["6 years", "six years"], &["six years"]),
    ];
    for (golds, dropped) in cases {
        assert_eq!(dropped_golds(golds), Ok(strings(dropped)), "{golds:?}");
    }
    let prompt =
        "Which status code does an API gateway return when a client exceeds its rate limit?";
    let kept = check_item(
        Category::TechnicalCode,
        item(prompt, &["429", "HTTP 429", "Too Many Requests"]),
        &Rules::default(),
    )
    .expect("kept");
    assert_eq!(kept.item.golds, ["429", "HTTP 429"]);
    let [note] = kept.dropped.as_slice() else {
        panic!("one gold dropped: {:?}", kept.dropped);
    };
    assert!(
        note.detail.contains("\"Too Many Requests\"") && note.detail.contains("\"429\""),
        "{}",
        note.detail
    );
    let reasoning = "A service promises 99.9% availability over a 30-day month: how many \
                     minutes of downtime are allowed before the SLA is breached?";
    let words_beside_the_number = item(reasoning, &["43.2", "forty-three point two"]);
    assert_eq!(
        kept_golds(Category::Reasoning, words_beside_the_number),
        Ok(strings(&["43.2"]))
    );
}

#[test]
fn golds_distinct_facts() {
    let distinct: &[&[&str]] = &[
        &["SOC 2", "ISO 27001"],
        &["3 days", "5 days"],
        &["PCI DSS", "SOC 2"],
        &["4 hours", "4 days"],
        &["Alice Chen", "Bob Smith"],
        &["v2.3.1", "v2.3.2"],
        &["1.25", "1.25", "1.22"],
        &["east region", "west region"],
        &["4h", "4 days"],
        &["15:30", "16:30"],
        // Two providers' hosts, a 1.5B author's golds for "the payment gateway API's URL".
        &["https://api.stripe.com", "https://api.paypal.com"],
    ];
    for golds in distinct {
        assert_eq!(golds_outcome(golds), "golds_distinct_facts", "{golds:?}");
    }
}

const CRM_DIALOG: &str = "Customer: Our EMEA and APAC sales teams each picked their own CRM \
    last year. Which one is each team on?\n\
    Agent: The EMEA team runs Dynamics 365 Sales, and the APAC team runs Salesforce Sales Cloud.\n\
    Customer: Thanks. And for the other one, what was it again?";

#[test]
fn golds_each_named_apart_in_the_context_are_distinct_facts() {
    let two_teams = item(
        CRM_DIALOG,
        &["Dynamics 365 Sales", "Salesforce Sales Cloud"],
    );
    assert_eq!(
        outcome(Category::Conversational, &two_teams),
        "golds_distinct_facts"
    );
    let retention = "Customer: We run two workspaces, Atlas and Borealis. How long does each \
        keep its audit logs?\n\
        Agent: Atlas keeps audit logs for 30 days, and Borealis keeps them for one month.\n\
        Customer: Understood. And how long does the second one keep them?";
    assert_eq!(
        outcome(
            Category::Conversational,
            &item(retention, &["one month", "30 days"])
        ),
        "golds_distinct_facts"
    );
    let side_by_side =
        CRM_DIALOG.replace("Dynamics 365 Sales,", "Dynamics 365 Sales (Dynamics CRM),");
    let one_team = item(&side_by_side, &["Dynamics 365 Sales", "Dynamics CRM"]);
    assert_eq!(outcome(Category::Conversational, &one_team), "ok");
    let shorter = item(CRM_DIALOG, &["Salesforce Sales Cloud", "Sales Cloud"]);
    assert_eq!(outcome(Category::Conversational, &shorter), "ok");
}

#[test]
fn gold_unit_mismatch() {
    let tenant = |question: &str| {
        format!(
            "Memory:\n- tenant: Larkspur Dental Group\n- sso_provider: Azure AD\n\
             - session_idle_timeout: 20 minutes\n- audit_log_retention: 6 years\n\n\
             Question: {question}"
        )
    };
    let outcome_of = |question: &str| {
        let recall = memory(&tenant(question), &["6 years"], &["6 years"], &[]);
        outcome(Category::MemoryRecall, &recall)
    };
    for question in [
        "How many days of audit logs are retained?",
        "How long, in days, are audit logs retained?",
        "What is the number of calendar days that audit logs are retained?",
    ] {
        assert_eq!(outcome_of(question), "gold_unit_mismatch", "{question}");
    }
    for question in [
        "How long are audit logs retained?",
        "How many years of audit logs are retained?",
        "How long must the tenant keep its audit logs, in years?",
    ] {
        assert_eq!(outcome_of(question), "ok", "{question}");
    }
    let reasoning = "A service promises 99.9% availability over a 30-day month: how many \
                     minutes of downtime are allowed before the SLA is breached?";
    assert_eq!(
        outcome(Category::Reasoning, &item(reasoning, &["0.72 hours"])),
        "gold_unit_mismatch"
    );
    assert_eq!(
        dropped_golds_of(
            Category::Reasoning,
            reasoning,
            &["43.2 minutes", "0.72 hours"]
        ),
        Ok(strings(&["0.72 hours"]))
    );
}

/// A multi-document item a 1.5B author wrote and the panel passed: the question asks for days,
/// and the key is the snippets' count of transactions.
const TRANSACTIONS_AS_DAYS: &str = "[Doc 1] Credit risk model validation plan\n\
    The validation plan for the credit risk model was completed by the credit risk analytics \
    team on 15 April. The plan ran for 45 days.\n\n\
    [Doc 2] Payment batch reconciliation report, 10 June\n\
    The reconciliation report for the payment batch was sent to the finance department by the \
    payment processing team on 10 June. The report covers 327,114 transactions.\n\n\
    [Doc 3] Proposal: higher payment frequency (approved)\n\
    A proposal to increase the payment frequency to 10 times per month was reviewed on 10 June \
    and approved for cost reasons.\n\n\
    [Doc 4] Payment processing system capacity note\n\
    The payment processing system capacity was increased from 200 to 300 processors in \
    February; each processor has 2 TB of RAM and the replication factor stays at 4.\n\n\
    Question: Under the approved plan and the department's decision, how many days did the \
    payment batch reconciliation report cover?";

#[test]
fn a_key_the_context_counts_in_another_unit_than_the_question_asks_is_a_unit_mismatch() {
    let transactions = item(TRANSACTIONS_AS_DAYS, &["327,114"]);
    let rejected = check_item(Category::MultiDocumentQa, transactions, &Rules::default())
        .map(|_| ())
        .map_err(|r| (r.reason.code(), r.detail));
    assert!(
        matches!(&rejected, Err(("gold_unit_mismatch", detail)) if detail.contains("transactions")),
        "{rejected:?}"
    );
    let plan = TRANSACTIONS_AS_DAYS.replace(
        "how many days did the payment batch reconciliation report cover?",
        "how many days did the credit risk validation plan run?",
    );
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(&plan, &["45"])),
        "ok"
    );
    let calendar = plan.replace("ran for 45 days", "ran for 45 calendar days");
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(&calendar, &["45"])),
        "ok"
    );
}

/// A multi-document item a 1.5B author wrote and the panel passed: its golds are words of its
/// own question.
const ECHOED_PRACTICES: &str = "[Doc 1] DevOps best practices for deploying web applications \
    using Kubernetes and Helm.\nKubernetes provides a declarative and automated way to manage \
    containerized applications. Helm allows developers to package and distribute applications \
    as containers using templates.\n\n[Doc 2] Best practices for automating devOps processes\n\
    Best practices for automating devOps processes include:\n- Use automation tools to automate \
    repetitive tasks.\n- Establish a team-wide culture of automation.\n\n\
    [Doc 3] Kubernetes service discovery\nKubernetes service discovery allows applications to \
    discover services in other parts of the cluster without knowing the IP addresses or port \
    numbers.\n\n[Doc 4] Kubernetes configuration file format\nKubernetes configuration files \
    are used to define the desired state of a cluster, including the nodes, pods, services, and \
    networking.\n\nQuestion: What is the best practice for automating the deployment process of \
    web applications using Kubernetes and Helm?";

#[test]
fn a_gold_made_of_its_questions_own_words_is_in_the_question() {
    for golds in [
        &["best practices for automating", "Kubernetes best practices"][..],
        &["best practices for automating"],
    ] {
        assert_eq!(
            outcome(Category::MultiDocumentQa, &item(ECHOED_PRACTICES, golds)),
            "gold_in_question",
            "{golds:?}"
        );
    }
    assert_eq!(
        outcome(
            Category::MultiDocumentQa,
            &item(ECHOED_PRACTICES, &["automation tools"])
        ),
        "ok"
    );
}

/// The main job's release (seed 20261129) held this item: its key is Doc 1's title, which is the
/// question's own words with `policy` in the plural.
#[test]
fn a_gold_that_is_its_questions_words_with_a_plural_in_ies_is_in_the_question() {
    let prompt = "[Doc 1] IAM policies for user access control\nThe IAM policies for user access control are designed to ensure that only authorized users can access sensitive data. The policies are reviewed and updated regularly to reflect changes in organizational requirements and security policies.\n\n[Doc 2] IAM role hierarchy\nThe IAM role hierarchy is designed to ensure that users have the necessary permissions to perform their jobs. The hierarchy is reviewed and updated regularly to reflect changes in organizational requirements and security policies.\n\n[Doc 3] IAM access control matrix\nThe IAM access control matrix is designed to ensure that users have the necessary permissions to perform their jobs. The matrix is reviewed and updated regularly to reflect changes in organizational requirements and security policies.\n\n[Doc 4] IAM access control review\nThe IAM access control review is designed to ensure that users have the necessary permissions to perform their jobs. The review is reviewed and updated regularly to reflect changes in organizational requirements and security policies.\n\nQuestion: What is the IAM policy for user access control?";
    assert_eq!(
        outcome(
            Category::MultiDocumentQa,
            &item(prompt, &["IAM policies for user.access.control"])
        ),
        "gold_in_question"
    );
}

#[test]
fn a_question_that_asks_two_things_is_two_questions() {
    // The question of a long_document_qa item a 1.5B author wrote, keyed by the vendor alone.
    let vendor = "Which vendor was responsible for the breach and how did they update their \
                  software to fix the vulnerability?";
    let joined = "How long are EU audit logs kept, and which board signed off the standard?";
    for question in [vendor, joined] {
        let two = SNIPPETS.replace("How long are EU audit logs kept?", question);
        assert_eq!(
            outcome(Category::MultiDocumentQa, &item(&two, &["400 days"])),
            "two_questions",
            "{question}"
        );
    }
    let one = SNIPPETS.replace(
        "How long are EU audit logs kept?",
        "How long are EU and US audit logs kept in total?",
    );
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(&one, &["400 days"])),
        "ok"
    );
    assert_eq!(
        outcome(Category::Conversational, &item(DIALOG, &["40 seats"])),
        "ok",
        "a follow-up that opens with \"And how\" asks one thing"
    );
}

#[test]
fn a_dialog_whose_last_question_repeats_the_askers_first_is_a_turn_structure_reject() {
    // A conversational item a 1.5B author wrote, released by the main job: the customer asks
    // again what their own first turn asked (and answered).
    let repeated = "Customer: Hi, we're preparing an order for our new product. What's the \
        shipping cut-off date for our new product? It's on track to arrive by 20th September, \
        but we need to make sure it's ready for delivery on time.\n\
        Agent: Our new product's shipping cut-off date is 20th September, and it will arrive on \
        time if you place your order by that date.\n\
        Customer: Thank you. Can you confirm the shipping cut-off date for our new product?";
    assert_eq!(
        outcome(
            Category::Conversational,
            &item(repeated, &["20th September", "September 20"])
        ),
        "turn_structure"
    );
    assert_eq!(
        outcome(Category::Conversational, &item(DIALOG, &["40 seats"])),
        "ok"
    );
    assert_eq!(
        outcome(
            Category::Conversational,
            &item(CRM_DIALOG, &["Salesforce Sales Cloud"])
        ),
        "ok"
    );
}

#[test]
fn a_code_question_must_not_state_the_code_it_asks_for() {
    let prompt = "Our product API returns a 404 whenever a client requests an archived SKU, \
                  and the mobile team wants a friendlier message. Which HTTP status code \
                  should the mobile client check for?";
    for golds in [&["404"][..], &["HTTP 404"], &["404", "HTTP 404"]] {
        assert_eq!(
            outcome(Category::TechnicalCode, &item(prompt, golds)),
            "gold_in_prompt",
            "{golds:?}"
        );
    }
    let commits = "Our sales team (Python 3.11, SQLAlchemy 2.0) is having trouble retrieving customer data from the CRM system:\n\n    def fetch_customer_data(customer_id):\n        session = Session()\n        customer = session.query(Customer).filter_by(id=customer_id).first()\n        session.close()\n        return customer\n\nWhat keyword argument must be added to the SQLAlchemy session to ensure it commits changes to the database?";
    assert_eq!(
        outcome(
            Category::TechnicalCode,
            &item(commits, &["commit", "commit session", "commit changes"])
        ),
        "gold_in_prompt"
    );
    let untold = prompt.replace("returns a 404", "refuses the request");
    assert_eq!(
        outcome(
            Category::TechnicalCode,
            &item(&untold, &["404", "HTTP 404"])
        ),
        "ok"
    );
    let prose = "Code review question from the platform team. A Rust handler uses `?` on a \
                 `serde_json::Error`. Which standard trait must the error type implement?";
    assert_eq!(
        outcome(
            Category::TechnicalCode,
            &item(prose, &["From", "From trait"])
        ),
        "ok"
    );
}

#[test]
fn gold_not_numeric() {
    let prompt = "A fleet serves 1,200 requests per second; each pod handles 150. How many pods?";
    assert_eq!(
        outcome(Category::Reasoning, &item(prompt, &["eight pods"])),
        "gold_not_numeric"
    );
    assert_eq!(
        outcome(Category::Reasoning, &item(prompt, &["8 to 9"])),
        "gold_not_numeric"
    );
    assert_eq!(
        outcome(Category::Reasoning, &item(prompt, &["8", "8 pods"])),
        "ok"
    );
    assert_eq!(
        outcome(Category::SimpleFactual, &item(prompt, &["eight pods"])),
        "ok"
    );
}

#[test]
fn gold_in_prompt() {
    let prompt = "Which port does PostgreSQL listen on by default for client connections? We \
                  saw 54321 in the logs of the staging cluster last week.";
    for category in [Category::SimpleFactual, Category::BloatedFactual] {
        assert_eq!(
            outcome(category, &item(prompt, &["5432"])),
            "gold_in_prompt"
        );
        assert_eq!(outcome(category, &item(prompt, &["port 5432"])), "ok");
    }
    let reasoning = "A service promises 99.9% availability over a 30-day month: how many \
                     minutes of downtime are allowed before the SLA is breached?";
    for category in [Category::Reasoning, Category::BloatedReasoning] {
        assert_eq!(
            outcome(category, &item(reasoning, &["9.9"])),
            "gold_in_prompt"
        );
        assert_eq!(
            outcome(category, &item(reasoning, &["43.2", "43.2 minutes"])),
            "ok"
        );
    }
}

#[test]
fn no_question() {
    let statement = document(300).replace("How long are audit logs kept?", "Logs are kept.");
    assert_eq!(
        outcome(Category::LongDocumentQa, &item(&statement, &["400 days"])),
        "no_question"
    );
    let empty_question =
        SNIPPETS.replace("Question: How long are EU audit logs kept?", "Question:");
    assert_eq!(
        outcome(
            Category::MultiDocumentQa,
            &item(&empty_question, &["400 days"])
        ),
        "prompt_cut"
    );
    let told = SNIPPETS.replace(
        "Question: How long are EU audit logs kept?",
        "The EU figure is the one that matters here.",
    );
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(&told, &["400 days"])),
        "no_question"
    );
    let trailing = SNIPPETS.replace(
        "How long are EU audit logs kept?",
        "How long are EU audit logs kept? The board revisits the figure every spring, \
         together with the US one.",
    );
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(&trailing, &["400 days"])),
        "question_not_last"
    );
    let recall = memory(
        &MEMORY.replace("Question:", "Q:"),
        &["Okta"],
        &["Okta"],
        &[],
    );
    assert_eq!(outcome(Category::MemoryRecall, &recall), "ok");
    let unprefixed = document(300).replace("\n\nQuestion: ", "\n\n");
    assert_eq!(
        outcome(Category::LongDocumentQa, &item(&unprefixed, &["400 days"])),
        "ok"
    );
    assert_eq!(
        outcome(
            Category::LongDocumentQa,
            &item(&document(300), &["400 days"])
        ),
        "ok"
    );
}

#[test]
fn doc_length() {
    assert_eq!(
        outcome(
            Category::LongDocumentQa,
            &item(&document(249), &["400 days"])
        ),
        "doc_length"
    );
    assert_eq!(
        outcome(
            Category::LongDocumentQa,
            &item(&document(451), &["400 days"])
        ),
        "doc_length"
    );
    assert_eq!(
        outcome(
            Category::LongDocumentQa,
            &item(&document(250), &["400 days"])
        ),
        "ok"
    );
    assert_eq!(
        outcome(
            Category::LongDocumentQa,
            &item(&document(450), &["400 days"])
        ),
        "ok"
    );
}

#[test]
fn snippet_count() {
    let three = SNIPPETS.replace("[Doc 4] Archive\n", "Archive\n");
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(&three, &["400 days"])),
        "snippet_count"
    );
    let seven = SNIPPETS.replace(
        "\n\nQuestion:",
        "\n[Doc 5] a\nx\n[Doc 6] b\ny\n[Doc 7] c\nz\n\nQuestion:",
    );
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(&seven, &["400 days"])),
        "snippet_count"
    );
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(SNIPPETS, &["400 days"])),
        "ok"
    );
}

#[test]
fn snippet_labels() {
    let skipped = SNIPPETS.replace("[Doc 3]", "[Doc 5]");
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(&skipped, &["400 days"])),
        "snippet_labels"
    );
}

/// Two multi_document_qa replies of the 1.5B author (seed 20261129, a top-up round) that passed
/// the gate and the panel: the second repeats two snippets whole, the first a snippet's text
/// under another year.
#[test]
fn snippets_that_say_the_same_thing_word_for_word_are_one_source_shown_twice() {
    let repeated_whole = "[Doc 1] DevOps team meeting notes, 14 April\nThe team discussed the deployment of a new cloud platform. The team agreed to use AWS for the first phase, but is considering Azure for the second phase. The team is also considering using Kubernetes for the third phase.\n\n[Doc 2] Cloud platform sizing note\nThe cloud platform is growing from 10 to 15 nodes in February; each node has 20 GB of RAM and the replication factor stays at 3.\n\n[Doc 3] DevOps team meeting notes, 21 April\nThe team discussed the deployment of a new cloud platform. The team agreed to use AWS for the first phase, but is considering Azure for the second phase. The team is also considering using Kubernetes for the third phase.\n\n[Doc 4] Cloud platform sizing note\nThe cloud platform is growing from 10 to 15 nodes in February; each node has 20 GB of RAM and the replication factor stays at 3.\n\nQuestion: How many nodes does the cloud platform have?";
    let retitled = "[Doc 1] Insurance claims processing system (approved)\nClaim processing is a critical function for insurance companies. It involves managing claims from policyholders, investigating claims, and resolving disputes. The system should be able to handle claims from various sources, including online forms, phone calls, and email.\n\n[Doc 2] Insurance claims processing system, 2023\nThe system has been in use since 2023 and has been receiving regular updates to improve its efficiency and accuracy. The system has been tested extensively and is currently running smoothly.\n\n[Doc 3] Insurance claims processing system, 2024\nThe system has been updated with new features to improve its ability to handle complex claims. The system has been tested extensively and is currently running smoothly.\n\n[Doc 4] Insurance claims processing system, 2025\nThe system has been updated with new features to improve its ability to handle complex claims. The system has been tested extensively and is currently running smoothly.\n\nQuestion: What is the system's current status?";
    for (prompt, gold, pair) in [
        (repeated_whole, "15", "snippets 1 and 3"),
        (retitled, "running smoothly", "snippets 3 and 4"),
    ] {
        let fields = item(prompt, &[gold]);
        let rejection =
            check_item(Category::MultiDocumentQa, fields, &Rules::default()).expect_err(prompt);
        assert_eq!(rejection.reason, Reason::SnippetLabels, "{rejection}");
        assert!(rejection.detail.starts_with(pair), "{rejection}");
    }
    let same_title = SNIPPETS.replace("[Doc 4] Archive\n", "[Doc 4] Backups\n");
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(&same_title, &["400 days"])),
        "ok",
        "snippets that share a title but not their text are distinct"
    );
}

/// A multi_document_qa reply of the 1.5B author (seed 20261129, a top-up round) that passed
/// the gate and the panel: its policy number is typed along the digit row.
#[test]
fn a_gold_typed_along_the_digit_row_is_a_placeholder() {
    let prompt = "[Doc 1] Insurance policy details, 2023\nThe policy number is 12345678901234567890. The policy type is auto insurance. The policy effective date is 1 January 2023. The policy expiration date is 31 December 2023.\n\n[Doc 2] Insurance claims, 2023\nA claim was filed for the auto insurance policy with the policy number 12345678901234567890. The claim amount is $5000. The claim date is 15 January 2023.\n\n[Doc 3] Insurance policy history, 2023\nThe policy history shows that the policy was renewed on 15 January 2023 for an additional year. The policy was renewed on 15 January 2023 for an additional year. The policy was renewed on 15 January 2023 for an additional year.\n\n[Doc 4] Insurance policy cancellation, 2023\nThe policy was canceled on 15 January 2023 for non-payment.\n\nQuestion: What is the policy number of the auto insurance policy?";
    assert_eq!(
        outcome(
            Category::MultiDocumentQa,
            &item(prompt, &["12345678901234567890"])
        ),
        "gold_placeholder"
    );
    for run in ["123456", "987654", "7890123", "PN-234567"] {
        assert_eq!(golds_outcome(&[run]), "gold_placeholder", "{run}");
    }
    for value in ["12345", "124567", "2024", "1,234,567", "135791"] {
        assert_eq!(golds_outcome(&[value]), "ok", "{value}");
    }
}

/// Two simple_factual replies of the 1.5B author (seed 20261129, a top-up round) that passed
/// the gate, and the panel with the author's own answer: each asks about "a typical" system.
/// Then three about an unnamed product, each released by a run of the local profile (the first
/// by the main job of 2026-12-06, ninth session), and a policy of no named insurer or account,
/// released by the fourteenth session's main job. The question the rule reads is the sentence
/// that asks, not a lead before a colon.
#[test]
fn a_factual_question_about_a_typical_thing_or_an_unnamed_product_is_generic() {
    for (prompt, gold) in [
        (
            "What is the maximum size of a CSV file that can be processed by a typical database system?",
            "100MB",
        ),
        (
            "What is the maximum number of transactions that can be processed per second by a typical bank transaction processing system?",
            "1000",
        ),
        (
            "What is the default shipping method for orders placed on e-commerce platforms?",
            "standard shipping",
        ),
        (
            "What is the minimum number of days required for a password to be changed in an IAM system?",
            "7 days",
        ),
        (
            "What is the default inventory level for a manufacturing ERP system?",
            "100",
        ),
        (
            "What is the maximum age of a life insurance policy in the United States?",
            "70",
        ),
        (
            "What is the minimum number of days that an IAM policy can be effective?",
            "30 days",
        ),
        (
            "What is the grace period of term life insurance policies in Ohio?",
            "30 days",
        ),
    ] {
        assert_eq!(
            outcome(Category::SimpleFactual, &item(prompt, &[gold])),
            "question_generic",
            "{prompt}"
        );
    }
    for prompt in [
        "Which TCP port does SSH typically listen on by default?",
        "What is the default port for SIP signalling over TLS (sips: URIs) under RFC 3261?",
        "What is the default port for HTTP requests in the HTTP/1.1 protocol?",
        "Which port does the Salesforce platform serve its API on by default?",
        "What is the default port of the Domain Name System?",
        "Which ISO standard specifies the requirements for an information security management system?",
        "Which element of the AWS IAM policy language lists the actions that a statement allows?",
        "Which GDPR article sets the privacy policy's duty to name the data controller?",
        "Lena asked this during the clinical systems team review at Mediva Systems: Which TCP port does a stock Redis server listen on?",
    ] {
        assert_eq!(
            outcome(Category::SimpleFactual, &item(prompt, &["5061"])),
            "ok",
            "{prompt}"
        );
    }
}

#[test]
fn turn_structure() {
    let ends_on_agent = format!("{DIALOG}\nAgent: Borealis has 40 seats.");
    let repeated = DIALOG.replace("Agent:", "Customer:");
    let one_turn = "Customer: We run two workspaces, Atlas and Borealis, on different plans \
                    this year. How many seats does Atlas have in total right now?";
    let five_turns = format!(
        "{}\nAgent: ok\nCustomer: a\nAgent: b\nCustomer: c\nAgent: d\nCustomer: e\nAgent: f\n{}",
        DIALOG.lines().next().unwrap_or_default(),
        "Customer: and the other one?"
    );
    for dialog in [ends_on_agent.as_str(), &repeated, one_turn, &five_turns] {
        assert_eq!(
            outcome(Category::Conversational, &item(dialog, &["40 seats"])),
            "turn_structure",
            "{dialog}"
        );
    }
    assert_eq!(
        outcome(Category::Conversational, &item(DIALOG, &["40", "40 seats"])),
        "ok"
    );
}

#[test]
fn memory_block() {
    let three_facts = MEMORY
        .replace("- plan: Enterprise\n", "")
        .replace("- region: eu-central-1\n", "");
    let no_header = MEMORY.replace("Memory:\n", "Stored facts:\n");
    let recall = memory(&three_facts, &["Okta"], &["Okta"], &[]);
    assert_eq!(outcome(Category::MemoryRecall, &recall), "memory_block");
    let recall = memory(&no_header, &["Okta"], &["Okta"], &[]);
    assert_eq!(outcome(Category::MemoryRecall, &recall), "ok");
    assert_eq!(
        outcome(
            Category::MemoryRecall,
            &memory(MEMORY, &["Okta"], &["Okta"], &[])
        ),
        "ok"
    );
}

#[test]
fn gold_not_in_context() {
    let question_only = document(300).replace("400 days", "a while") + " 400 days?";
    assert_eq!(
        outcome(
            Category::LongDocumentQa,
            &item(&question_only, &["400 days"])
        ),
        "gold_not_in_context"
    );
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(SNIPPETS, &["30 days"])),
        "gold_not_in_context"
    );
    let in_last_turn = format!("{DIALOG} Is it 45?");
    assert_eq!(
        outcome(Category::Conversational, &item(&in_last_turn, &["45"])),
        "gold_not_in_context"
    );
    assert_eq!(
        outcome(
            Category::MemoryRecall,
            &memory(MEMORY, &["Azure AD"], &["Azure AD"], &[])
        ),
        "gold_not_in_context"
    );
    let asked_in_question = UPDATE.replace("minimum version?", "minimum version, 1.27?");
    let update = memory(&asked_in_question, &["1.27"], &["1.27"], &["1.22"]);
    assert_eq!(
        outcome(Category::MemoryUpdate, &update),
        "gold_not_in_context"
    );
    assert_eq!(
        outcome(
            Category::MemoryUpdate,
            &memory(UPDATE, &["1.25"], &["1.25"], &["1.22"])
        ),
        "ok"
    );
}

#[test]
fn missing_durable() {
    let missing = ItemFields {
        durable: None,
        ..memory(MEMORY, &["Okta"], &[], &[])
    };
    assert_eq!(outcome(Category::MemoryRecall, &missing), "missing_durable");
    assert_eq!(
        outcome(Category::MemoryRecall, &memory(MEMORY, &["Okta"], &[], &[])),
        "missing_durable"
    );
    assert_eq!(
        outcome(
            Category::MemoryRecall,
            &memory(MEMORY, &["Okta"], &["Okta", " - "], &[])
        ),
        "missing_durable"
    );
    assert_eq!(
        outcome(
            Category::MemoryRecall,
            &memory(MEMORY, &["Okta"], &["Okta"], &[])
        ),
        "ok"
    );
}

#[test]
fn durable_not_gold() {
    let wrong = memory(MEMORY, &["Okta"], &["Enterprise"], &[]);
    assert_eq!(outcome(Category::MemoryRecall, &wrong), "durable_not_gold");
    let variant = memory(MEMORY, &["Okta"], &["Okta Workforce Identity"], &[]);
    assert_eq!(outcome(Category::MemoryRecall, &variant), "ok");
}

#[test]
fn missing_stale() {
    let absent = ItemFields {
        stale: None,
        ..memory(UPDATE, &["1.25"], &["1.25"], &[])
    };
    assert_eq!(outcome(Category::MemoryUpdate, &absent), "missing_stale");
    assert_eq!(
        outcome(
            Category::MemoryUpdate,
            &memory(UPDATE, &["1.25"], &["1.25"], &[])
        ),
        "missing_stale"
    );
    assert_eq!(
        outcome(
            Category::MemoryUpdate,
            &memory(UPDATE, &["1.25"], &["1.25"], &["1.22", "?"])
        ),
        "missing_stale"
    );
    let recall_without_stale = ItemFields {
        stale: None,
        ..memory(MEMORY, &["Okta"], &["Okta"], &[])
    };
    assert_eq!(outcome(Category::MemoryRecall, &recall_without_stale), "ok");
}

#[test]
fn stale_not_in_prompt() {
    let update = memory(UPDATE, &["1.25"], &["1.25"], &["1.21"]);
    assert_eq!(
        outcome(Category::MemoryUpdate, &update),
        "stale_not_in_prompt"
    );
    let recall = memory(MEMORY, &["Okta"], &["Okta"], &["Ping"]);
    assert_eq!(
        outcome(Category::MemoryRecall, &recall),
        "stale_not_in_prompt"
    );
}

#[test]
fn stale_graded_correct() {
    let prompt = UPDATE
        .replace("1.22", "1.25")
        .replace("version of 1.25", "version of 1.2");
    let substring = memory(&prompt, &["1.2"], &["1.2"], &["1.25"]);
    assert_eq!(
        outcome(Category::MemoryUpdate, &substring),
        "stale_graded_correct"
    );
    let same = memory(UPDATE, &["1.25", "1.22"], &["1.25"], &["1.22"]);
    assert_ne!(outcome(Category::MemoryUpdate, &same), "ok");
    assert_eq!(
        outcome(
            Category::MemoryUpdate,
            &memory(UPDATE, &["1.25", "version 1.25"], &["1.25"], &["1.22"])
        ),
        "ok"
    );
}

/// Released by the fourteenth session's main job: the update moved the deployment from
/// production to staging, and the question asks for the version "for the production
/// environment", a state that no longer holds. Beside it, two released items of the same run
/// whose question names a stored value the update repeats (`Standard policy`) or does not touch
/// (`Shopify`).
#[test]
fn a_memory_update_question_on_a_replaced_value_asks_about_a_state_gone() {
    let moved = memory(
        "Memory:\n- cloud_provider: Amazon Web Services (AWS)\n- infrastructure_as_code: Terraform\n- deployment_environment: production\n- infrastructure_version: v1.0.0\n\nUpdate from DevOps Team (2023-04-01): the cloud provider has been updated to Microsoft Azure (Azure); the infrastructure as code has been updated to CloudFormation; the deployment environment has been updated to staging; the infrastructure version has been updated to v1.1.0.\n\nQuestion: What is the current infrastructure version for the production environment?",
        &["v1.1.0", "version 1.1.0"],
        &["v1.1.0"],
        &["v1.0.0"],
    );
    assert_eq!(
        outcome(Category::MemoryUpdate, &moved),
        "question_on_replaced_value"
    );
    let repeated = memory(
        "Memory:\n- company: Blue Star Insurance\n- policy_type: Standard policy\n- coverage_limit: $100,000\n- premium_rate: 0.05\n- claim_handling_time: 3 days\n\nUpdate from Claims Management (1 May): the policy type has been updated to Standard policy; the coverage limit has been increased to $150,000; the premium rate has been reduced to 0.04; the claim handling time has been reduced to 2 days.\n\nQuestion: What is the new claim handling time for Blue Star Insurance's Standard policy?",
        &["2 days"],
        &["2 days"],
        &["3 days"],
    );
    let untouched = memory(
        "Memory:\n- e-commerce platform: Shopify\n- order_processing_time: 30 minutes\n- shipping_cost: $5\n- payment_method: credit card\n- tax_rate: 7%\n\nUpdate from IT Ops (10 May): Shopify has introduced a new feature that allows customers to track their order status in real-time. The order processing time has been reduced to 25 minutes, and the shipping cost has been increased to $7.\n\nQuestion: What is the average order processing time for Shopify customers?",
        &["25 minutes"],
        &["25 minutes"],
        &["30 minutes"],
    );
    for item in [&repeated, &untouched] {
        assert_eq!(
            outcome(Category::MemoryUpdate, item),
            "ok",
            "{}",
            item.prompt
        );
    }
}

#[test]
fn a_memory_update_whose_key_the_memory_already_holds_is_not_an_update() {
    // Two replies of the 1.5B author: the main job's, released as sas-local-0008, and seed
    // 20261212's, which the context probe flagged.
    let added_again = memory(
        "Memory:\n- role: IAM administrator\n- user: John Doe\n- group: IT team\n- policy: allow access to all resources\n- endpoint: /api\n- version: 1.0\n\nUpdate from IAM Ops (2023-05-15): the IAM administrator role has been renamed to 'Security Administrator'; the user 'John Doe' has been added to the 'IT team' group; the policy 'allow access to all resources' has been updated to 'allow access to specific resources'; the endpoint '/api' has been updated to '/v1/api'; the version '1.0' has been updated to '1.1'; the user 'John Doe' has been removed from the 'IT team' group.\n\nQuestion: Who has been added to the 'IT team' group?",
        &["John Doe"],
        &["John Doe"],
        &["IT team"],
    );
    let same_date = memory(
        "Memory:\n- role: IAM administrator\n- resource: user\n- policy: allow access to all resources\n- effective_date: 2023-04-01\n- expiration_date: 2024-04-01\n\nUpdate from IAM Ops (2 April): the administrator role has been updated to IAM manager; the policy has been updated to allow access to all resources in all environments; the effective date has been updated to 2023-04-01; the expiration date has been updated to 2024-04-01.\n\nQuestion: What is the current effective date for the IAM administrator role?",
        &["2023-04-01"],
        &["2023-04-01"],
        &["2024-04-01"],
    );
    for item in [&added_again, &same_date] {
        assert_eq!(
            outcome(Category::MemoryUpdate, item),
            "key_not_updated",
            "{}",
            item.prompt
        );
    }
    // Released as sas-local-0009: the key is new.
    let updated = memory(
        "Memory:\n- company: Blue Star Insurance\n- policy_type: Standard Policy\n- coverage_limit: $100,000\n- premium_rate: 0.05\n- claim_handling_time: 3 days\n\nUpdate from Claims Management (15 June): the claim handling time has been reduced to 2 days; the premium rate has been increased to 0.06.\n\nQuestion: What is the average claim handling time for Blue Star Insurance's Standard Policy?",
        &["2 days"],
        &["2 days"],
        &["3 days"],
    );
    assert_eq!(outcome(Category::MemoryUpdate, &updated), "ok");
    // A changelog of fact lines alone has no facts above an update: its last line may hold the key.
    let changelog = memory(
        "Payout cutoff changelog:\n- 2024-06-02: 17:00 ET\n- 2024-06-09: 15:30 ET\n\nQuestion: By what time must a payout adjustment be submitted now?",
        &["15:30 ET"],
        &["15:30 ET"],
        &["17:00 ET"],
    );
    assert_eq!(outcome(Category::MemoryUpdate, &changelog), "ok");
    let recall = memory(MEMORY, &["Okta"], &["Okta"], &[]);
    assert_eq!(
        outcome(Category::MemoryRecall, &recall),
        "ok",
        "a memory_recall key is a stored value by design"
    );
}

#[test]
fn not_bloated() {
    let rules = Rules::default();
    assert_eq!(
        check_bloated(59, None, &rules).unwrap_err().reason,
        Reason::NotBloated
    );
    assert!(check_bloated(60, None, &rules).is_ok());
    assert_eq!(
        check_bloated(89, Some(30.0), &rules).unwrap_err().reason,
        Reason::NotBloated
    );
    assert!(check_bloated(90, Some(30.0), &rules).is_ok());
    assert!(check_bloated(60, Some(10.0), &rules).is_ok());
    assert!(check_bloated(59, Some(10.0), &rules).is_err());
    assert!(check_bloated(89, Some(30.0), &rules)
        .unwrap_err()
        .detail
        .contains("needs 90"));
}

#[test]
fn technical_code_may_quote_its_answer() {
    let snippet = "```go\ngo test ./...\n```\nWhich `go test` flag detects data races?";
    assert_eq!(
        outcome(Category::TechnicalCode, &item(snippet, &["-race"])),
        "ok"
    );
}

/// A multi-document item a 1.5B author wrote and the panel passed: the snippets say the project
/// ends "by the end of May", and the second gold invents a day of it.
const COMPLETION_IN_MAY: &str = "[Doc 1] Logistics department project timeline\nThe project \
    timeline for the logistics department involves several milestones and deadlines. The first \
    milestone is scheduled for 15th April. The second milestone is scheduled for 30th April. The \
    project is expected to be completed by the end of May.\n\n[Doc 2] Project management phone \
    call, 18th April\nDuring the project management phone call, the team discussed the progress \
    of the logistics project. The project is 75% complete, with the remaining work estimated to \
    be completed by the end of May.\n\n[Doc 3] Project budget update, 20th April\nThe project \
    budget update shows that the logistics department has allocated $500,000 for the project. \
    This allocation includes $100,000 for materials and $400,000 for labor.\n\n[Doc 4] Logistics \
    department resources allocation\nThe logistics department has allocated 100 employees to the \
    project. The team is expected to complete the project within 7 weeks.\n\nQuestion: What is \
    the estimated completion date for the logistics project?";

#[test]
fn a_variant_with_a_number_the_context_never_writes_is_dropped() {
    let kept = check_item(
        Category::MultiDocumentQa,
        item(COMPLETION_IN_MAY, &["May", "5th May"]),
        &Rules::default(),
    )
    .expect("kept with its key");
    assert_eq!(kept.item.golds, ["May"]);
    let [note] = kept.dropped.as_slice() else {
        panic!("one gold dropped: {:?}", kept.dropped);
    };
    assert!(
        note.detail.contains("\"5th May\"") && note.detail.contains("nowhere in the snippets"),
        "{}",
        note.detail
    );
    assert_eq!(
        dropped_golds_of(
            Category::MultiDocumentQa,
            COMPLETION_IN_MAY,
            &["end of May", "May", "the end of May"]
        ),
        Ok(Vec::new())
    );
    let on_the_clock = COMPLETION_IN_MAY.replace(
        "What is the estimated completion date for the logistics project?",
        "At what time did the project management phone call start?",
    );
    let on_the_clock =
        on_the_clock.replace("phone call, 18th April", "phone call, 18th April, 15:30");
    assert_eq!(
        dropped_golds_of(
            Category::MultiDocumentQa,
            &on_the_clock,
            &["15:30", "3:30 pm"]
        ),
        Ok(Vec::new())
    );
    let stated = COMPLETION_IN_MAY.replace(
        "What is the estimated completion date for the logistics project?",
        "On which date is the second milestone scheduled?",
    );
    assert_eq!(
        dropped_golds_of(
            Category::MultiDocumentQa,
            &stated,
            &["30th April", "30 April"]
        ),
        Ok(Vec::new())
    );
}

/// A technical_code item the 1.5B author wrote at temperature 0.3, which the gate and the panel
/// passed into the main job's release: no code, and a key that no argument can be named.
const RETURN_AS_ARGUMENT: &str = "A data engineer (Python 3.11, pandas 1.4) is working on a data \
    pipeline that processes large datasets. The pipeline uses a custom function `process_data` to \
    clean and transform the data. However, the function is not working as expected. The engineer \
    notices that the function is not returning any data. What keyword argument must be added to \
    the function call to ensure it returns the processed data?";

#[test]
fn a_reserved_word_keyed_as_an_argument_is_rejected() {
    assert_eq!(
        outcome(
            Category::TechnicalCode,
            &item(
                RETURN_AS_ARGUMENT,
                &["return", "return=", "return keyword argument"]
            )
        ),
        "gold_reserved_word"
    );
    let real_name = RETURN_AS_ARGUMENT.replace(
        "What keyword argument must be added to the function call to ensure it returns the \
         processed data?",
        "Which keyword argument of pd.read_csv makes it skip lines it cannot parse?",
    );
    assert_ne!(real_name, RETURN_AS_ARGUMENT);
    assert_eq!(
        outcome(
            Category::TechnicalCode,
            &item(&real_name, &["on_bad_lines", "on_bad_lines="])
        ),
        "ok"
    );
    let statement = "Which Python statement ends a function and hands its value back to the \
                     caller?";
    assert_eq!(
        outcome(Category::TechnicalCode, &item(statement, &["return"])),
        "ok"
    );
}

/// Two items of the main job's release (the 1.5B author, seed 20261129): each listed its key
/// again in the same form, one of them four times.
const STORED_DATABASE: &str = "Memory:\n- tenant: Data Hub (HIPAA workspace)\n- platform: \
    Snowflake\n- database: Data Warehouse\n- user: admin\n- role: admin\n- access_level: full\n- \
    data_retention: 10 years\n\nQuestion: What is the name of the database used by the admin user \
    in the Data Hub tenant?";
const LOGISTICS_START: &str = "[Doc 1] Logistics operations are scheduled to start in 2023.\n\
    [Doc 2] Logistics team meeting notes, 10 April\nThe team discussed the logistics operations \
    for the upcoming year, including the start date of 2023.\n[Doc 3] Proposal: logistics budget \
    (approved)\nA proposal to increase the logistics budget by 10% was reviewed on 10 April and \
    approved.\n[Doc 4] Logistics cluster sizing note\nThe logistics Kafka cluster grew from 10 to \
    12 brokers in February; each broker has 4 TB of disk and the replication factor stays at \
    3.\nQuestion: When do logistics operations start?";

#[test]
fn a_gold_the_grader_reads_as_an_earlier_one_is_left_out() {
    let database = check_item(
        Category::MemoryRecall,
        memory(
            STORED_DATABASE,
            &["Data Warehouse", "data warehouse", "data warehouse"],
            &["Data Warehouse"],
            &[],
        ),
        &Rules::default(),
    )
    .expect("kept");
    assert_eq!(database.item.golds, ["Data Warehouse"]);
    assert!(
        database.dropped.is_empty(),
        "a repeat is no doubtful variant"
    );
    let start = check_item(
        Category::MultiDocumentQa,
        item(LOGISTICS_START, &["2023", "2023", "2023", "2023"]),
        &Rules::default(),
    )
    .expect("kept");
    assert_eq!(start.item.golds, ["2023"]);
    let forms = check_item(
        Category::MultiDocumentQa,
        item(LOGISTICS_START, &["2023", "in 2023", "2023"]),
        &Rules::default(),
    )
    .expect("kept");
    assert_eq!(forms.item.golds, ["2023", "in 2023"], "another form stays");
}

/// Three technical_code replies of the 1.5B author (seeds 20261206, 20261207 and 20261208), each
/// released by a run of the local profile, and a fourth released by the tenth session's main job
/// (seed 20261129), also worded "to fix this error": each asks what to do, which has many right
/// answers (a host, a port, a started server), and the key is one the author liked.
#[test]
fn a_question_that_asks_for_advice_has_no_single_answer() {
    let resolve = "Our sales team (Python 3.11, SQLAlchemy 2.0) is having trouble connecting to the CRM database. The error message is: 'Connection refused'. What should we add to the connection string to resolve this issue?";
    let fix = resolve.replace("resolve this issue", "fix this error");
    for (prompt, gold) in [
        (resolve, "host"),
        (fix.as_str(), "host"),
        ("Our financial analyst (Python 3.10, pandas 1.5) is trying to analyze a large dataset of transactions from a financial institution (Java 17, Spring Boot 2.7) but the analysis takes a long time because the dataset is too large:\n\n    def analyze_transactions(file_path):\n        df = pd.read_csv(file_path)\n        return df.describe()\n\nWhat keyword argument must be added to the pandas.read_csv call to increase the read speed?", "chunksize"),
        (
            "Our data platform (Python 3.11, pandas 1.4.4) is having trouble processing large datasets. We need to optimize the performance of the data ingestion process. Which method can we use to improve the efficiency of the data ingestion process?",
            "chunksize",
        ),
        (
            "A HIPAA-compliant SaaS provider needs to implement a feature that allows users to upload sensitive data securely. The provider wants to ensure that the data is encrypted before it is stored in the database. Which encryption algorithm should the provider use?",
            "AES",
        ),
        (
            "Our data platform team (Python 3.11, pandas 1.4.3) is having trouble with the performance of some of our data processing tasks. We suspect that the issue might be related to the use of the `read_csv` function from pandas. Can you suggest a way to optimize the performance of this function?",
            "chunksize",
        ),
        (
            "A HIPAA-compliant SaaS provider needs to implement a feature that allows users to upload sensitive documents. The provider wants to ensure that the documents are encrypted before they are stored in the database. Which encryption algorithm should be used to meet HIPAA compliance requirements?",
            "AES",
        ),
    ] {
        assert_eq!(
            outcome(Category::TechnicalCode, &item(prompt, &[gold])),
            "question_advice",
            "{prompt}"
        );
    }
    for (category, prompt, gold) in [
        (
            Category::TechnicalCode,
            "Our billing team (Python 3.11, requests 2.31) sometimes hangs for hours when the invoice API stops sending data:\n\n    resp = requests.get(url)\n\nWhich keyword argument must be added to the requests.get call so that it gives up instead of waiting indefinitely?",
            "timeout",
        ),
        (
            Category::TechnicalCode,
            "Our IAM team (Python 3.11, boto3 1.28) calls iam.create_role(RoleName=name) and gets an error. Which keyword argument should be added to the call to pass the trust policy document?",
            "AssumeRolePolicyDocument",
        ),
        (
            Category::SimpleFactual,
            "Which TCP port does SSH typically listen on by default?",
            "22",
        ),
        (
            Category::TechnicalCode,
            "Our ledger service (Python 3.11) calls int(\"12a\") while parsing a CSV row. Which exception is raised, and must be caught to resolve the row as invalid?",
            "ValueError",
        ),
        (
            Category::SimpleFactual,
            "Which protocol do hosts use to resolve an IPv4 address to a MAC address?",
            "ARP",
        ),
    ] {
        assert_eq!(outcome(category, &item(prompt, &[gold])), "ok", "{prompt}");
    }
}

/// Two multi_document_qa replies of the 1.5B author (seeds 20261207 and 20261209) that passed the
/// gate and both panel models: every snippet states the key, so no snippet is a distractor and
/// the question needs no picking. Two publishable records of the same runs, whose key two of
/// four snippets state, are kept.
/// The main job's release (seed 20261129) held this item: Doc 3 and Doc 4 each call their system
/// the latest version, and the key is Doc 4's.
#[test]
fn a_question_for_the_latest_one_over_two_snippets_that_each_claim_it_has_two_answers() {
    let prompt = "[Doc 1] Payment processing system PPS-PRO-100 (approved)\nPayment processing is a critical component of the fintech ecosystem. The PPS-PRO-100 system is designed to handle large volumes of transactions securely and efficiently. It supports multiple payment methods, including credit cards, debit cards, and electronic payments.\n\n[Doc 2] Payment processing system PPS-PRO-200 (approved)\nPPS-PRO-200 is a more advanced version of the PPS-PRO-100 system. It includes additional features such as fraud detection, risk assessment, and compliance monitoring. It is designed to handle even larger volumes of transactions and provide a more comprehensive payment processing experience.\n\n[Doc 3] Payment processing system PPS-PRO-300 (approved)\nPPS-PRO-300 is the latest version of the PPS-PRO-100 system. It includes even more advanced features such as machine learning, artificial intelligence, and natural language processing. It is designed to handle even larger volumes of transactions and provide a more advanced payment processing experience.\n\n[Doc 4] Payment processing system PPS-PRO-400 (approved)\nPPS-PRO-400 is the latest version of the PPS-PRO-100 system. It includes even more advanced features such as blockchain, smart contracts, and decentralized finance. It is designed to handle even larger volumes of transactions and provide a more advanced payment processing experience.\n\nQuestion: What is the latest version of the payment processing system?";
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(prompt, &["PPS-PRO-400"])),
        "two_snippets_answer"
    );
    let one_claimant = prompt.replace(
        "PPS-PRO-300 is the latest version",
        "PPS-PRO-300 is a newer version",
    );
    assert_eq!(
        outcome(
            Category::MultiDocumentQa,
            &item(&one_claimant, &["PPS-PRO-400"])
        ),
        "ok",
        "one snippet claims to be the latest"
    );
}

/// The sixth session's main job released this item: Doc 1 states the key, but three other snippets
/// each plan "a new version" of the system, in 2 weeks, 3 months and 4 weeks.
#[test]
fn a_question_that_cannot_tell_two_snippets_apart_has_two_answers() {
    let prompt = "[Doc 1] CRM system upgrade plan\nThe CRM system will be upgraded to version 3.0 on March 15th. The upgrade will include new features and improvements for sales, customer service, and marketing. The upgrade will be phased out over the next 6 months, with a 20% reduction in usage during the first 3 months.\n\n[Doc 2] CRM user feedback\nThe CRM team received feedback from users that the new version of the system is more intuitive and easier to use. The team is planning to release a new version of the system in the next 2 weeks.\n\n[Doc 3] CRM system performance report\nThe CRM team has released a performance report showing that the new version of the system is faster and more reliable than the previous version. The team is planning to release a new version of the system in the next 3 months.\n\n[Doc 4] CRM system user training\nThe CRM team has released a user training video showing how to use the new version of the system. The team is planning to release a new version of the system in the next 4 weeks.\n\nQuestion: What is the planned release date for the new version of the CRM system?";
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(prompt, &["March 15th"])),
        "two_snippets_answer"
    );
    let without_rivals = prompt
        .replace(
            "release a new version of the system in the next 2 weeks",
            "add training videos",
        )
        .replace(
            "release a new version of the system in the next 3 months",
            "publish its findings",
        )
        .replace(
            "release a new version of the system in the next 4 weeks",
            "hold a workshop",
        );
    assert_eq!(
        outcome(
            Category::MultiDocumentQa,
            &item(&without_rivals, &["March 15th"])
        ),
        "ok",
        "no other snippet speaks of releasing a new version"
    );
}

/// The main job's release (seed 20261129) held this item keyed `10000` alone, so an answer of
/// `10,000` would be graded wrong.
#[test]
fn an_amount_gets_its_form_with_or_without_thousands_separators() {
    let prompt = "Memory:\n- customer_id: 12345678901234567890\n- account_name: MyBank\n- account_type: Savings\n- account_currency: USD\n- account_balance: 10000\n- account_creation_date: 2023-01-01\n- account_status: Active\n\nQuestion: What is the current balance of this account?";
    assert_eq!(
        kept_golds(
            Category::MemoryRecall,
            memory(prompt, &["10000"], &["10000"], &[])
        ),
        Ok(strings(&["10000", "10,000"]))
    );
    let asked = "Which value does the audit log retention setting use by default?";
    for (golds, expected) in [
        (
            &["$1,500", "1500 USD"][..],
            &["$1,500", "$1500", "1500 USD", "1,500 USD"][..],
        ),
        (&["2023"], &["2023"]),
        (&["1999"], &["1999"]),
        (&["4500"], &["4500", "4,500"]),
        (&["12,480", "12480"], &["12,480", "12480"]),
        (&["250000"], &["250000", "250,000"]),
        (&["48213579064"], &["48213579064"]),
    ] {
        assert_eq!(
            kept_golds(Category::TechnicalCode, item(asked, golds)),
            Ok(strings(expected)),
            "{golds:?}"
        );
    }
    let released = "[Doc 1] Payment processing system PPS-123 (approved)\nPPS-123 is a robust payment processing system that handles transactions of all sizes. It supports multiple payment methods and integrates with various payment gateways.\n\n[Doc 2] Payment gateway details, 15 February\nPPS-123 uses the Stripe payment gateway for all transactions. The gateway supports multiple payment methods and integrates with various payment gateways.\n\n[Doc 3] Payment system review, 20 February\nPPS-123 was reviewed on 20 February and approved for continued operations. The system is stable and reliable.\n\n[Doc 4] Payment system sizing note\nPPS-123 has a total of 1000 payment processors and 500 payment gateways.\n\nQuestion: How many payment processors does PPS-123 have?";
    assert_eq!(
        kept_golds(Category::MultiDocumentQa, item(released, &["1000"])),
        Ok(strings(&["1000", "1,000"])),
        "a four-digit count that cannot be a year gains its grouped form"
    );
}

/// Two records of a main-job run (seed 20261129, top-ups by prior survival) were keyed `100GB`
/// and `1000 units` alone: the grader reads `100 GB` and `1,000 units` apart from them.
#[test]
fn a_number_gets_its_other_spacing_and_separators_before_a_unit() {
    let database = "Memory:\n- tenant: Data Platform Inc.\n- database_type: PostgreSQL\n- database_version: 14.5\n- database_size: 100GB\n- database_backup_frequency: daily\n- database_recovery_time: 1 hour\n\nQuestion: What is the size of the database?";
    let line = "Memory:\n- company: XYZ Manufacturing\n- ERP_version: v10.5\n- production_line: Line A\n- production_line_capacity: 1000 units\n- production_line_speed: 100 units/minute\n- production_line_start_date: 2023-01-01\n- production_line_end_date: 2024-01-01\n\nQuestion: What is the production line capacity of Line A?";
    for (prompt, key, expected) in [
        (database, "100GB", ["100GB", "100 GB"]),
        (line, "1000 units", ["1000 units", "1,000 units"]),
    ] {
        assert_eq!(
            kept_golds(Category::MemoryRecall, memory(prompt, &[key], &[key], &[])),
            Ok(strings(&expected))
        );
    }
    let asked = "Which value does the audit log retention setting use by default?";
    for (golds, expected) in [
        (&["20 TB"][..], &["20 TB", "20TB"][..]),
        (&["10000GB"], &["10000GB", "10000 GB", "10,000 GB"]),
        (&["2.5 GHz", "2.5GHz"], &["2.5 GHz", "2.5GHz"]),
        (&["5 days"], &["5 days"]),
        (&["5G"], &["5G"]),
        (&["GB"], &["GB"]),
        (&["2023 budget"], &["2023 budget"]),
    ] {
        assert_eq!(
            kept_golds(Category::TechnicalCode, item(asked, golds)),
            Ok(strings(expected)),
            "{golds:?}"
        );
    }
}

/// A seed-20261212 run released this record with its stale value three times over.
#[test]
fn a_memory_items_annotations_list_each_value_once() {
    let prompt = "Memory:\n- warehouse: Central Warehouse\n- delivery_time: 2 hours\n- delivery_frequency: daily\n- delivery_location: New York\n\nUpdate from Logistics Ops (15 May): the delivery frequency has changed to weekly; the delivery location has moved to Los Angeles; the delivery time has increased to 3 hours.\n\nQuestion: What is the expected delivery time for orders from the Central Warehouse in Los Angeles?";
    let kept = check_item(
        Category::MemoryUpdate,
        memory(
            prompt,
            &["3 hours"],
            &["3 hours", "3 Hours"],
            &["2 hours", "2 hours", "2 hours"],
        ),
        &Rules::default(),
    )
    .map(|kept| (kept.item.durable, kept.item.stale));
    assert_eq!(
        kept,
        Ok((Some(strings(&["3 hours"])), Some(strings(&["2 hours"]))))
    );
}

#[test]
fn a_key_that_every_snippet_but_one_states_leaves_no_distractors() {
    for (prompt, golds) in [
        (
            "[Doc 1] IAM policy for user John Doe\nThe IAM policy for user John Doe is set to allow access to all resources in the production environment.\n\n[Doc 2] IAM policy for user Jane Smith\nThe IAM policy for user Jane Smith is set to allow access to all resources in the development environment.\n\n[Doc 3] IAM policy for user Alice Johnson\nThe IAM policy for user Alice Johnson is set to allow access to all resources in the testing environment.\n\n[Doc 4] IAM policy for user Bob Brown\nThe IAM policy for user Bob Brown is set to allow access to all resources in the production environment.\n\nQuestion: What is the IAM policy for user Alice Johnson?",
            &["allow access to all"][..],
        ),
        (
            "[Doc 1] ERP system configuration\nThe ERP system configuration includes the following settings: database type, database version, and database size. The database type is Oracle, the database version is 19c, and the database size is 100 TB.\n\n[Doc 2] ERP system requirements\nThe ERP system requirements specify the following: database type, database version, and database size. The database type is Oracle, the database version is 19c, and the database size is 100 TB.\n\n[Doc 3] ERP system deployment\nThe ERP system deployment includes the following settings: database type, database version, and database size. The database type is Oracle, the database version is 19c, and the database size is 100 TB.\n\n[Doc 4] ERP system maintenance\nThe ERP system maintenance includes the following settings: database type, database version, and database size. The database type is Oracle, the database version is 19c, and the database size is 100 TB.\n\nQuestion: What is the database size of the ERP system configuration?",
            &["100 TB", "100"][..],
        ),
        ("[Doc 1] Logistics team meeting notes, 2023-04-15\nThe logistics team discussed the upcoming delivery schedule for the next quarter. The team agreed to extend the delivery window by 2 weeks, but they also decided to prioritize the delivery of critical orders to ensure timely delivery.\n\n[Doc 2] Logistics team project plan, 2023-04-15\nThe logistics team developed a new project plan for the upcoming delivery of critical orders. The project plan includes a detailed timeline for the delivery, including a 2-week extension for the delivery window.\n\n[Doc 3] Logistics team project status report, 2023-04-15\nThe logistics team provided a status report on the project plan for the upcoming delivery of critical orders. The report includes a detailed timeline for the delivery, including a 2-week extension for the delivery window.\n\n[Doc 4] Logistics team project budget, 2023-04-15\nThe logistics team provided a budget for the project plan for the upcoming delivery of critical orders. The budget includes a detailed timeline for the delivery, including a 2-week extension for the delivery window.\n\nQuestion: How many weeks does the logistics team plan to extend the delivery window for critical orders?", &["2 weeks", "2-week"][..]),
    ] {
        assert_eq!(
            outcome(Category::MultiDocumentQa, &item(prompt, golds)),
            "no_distractors",
            "{prompt}"
        );
    }
    for (prompt, golds) in [
        (
            "[Doc 1] Call center policies, 2023\nThe call center policies state that all calls are recorded for 30 days. This is the standard for all calls.\n\n[Doc 2] Call center minutes, 2023\nThe call center minutes report shows that the average call duration is 12 minutes, with a standard deviation of 3 minutes. This is consistent with the standard.\n\n[Doc 3] Call center training, 2023\nThe training materials for call center staff state that all calls are recorded for 30 days. This is the standard for all calls.\n\n[Doc 4] Call center performance, 2023\nThe call center performance report shows that the average call duration is 12 minutes, with a standard deviation of 3 minutes. This is consistent with the standard.\n\nQuestion: How many days of call recordings are required by the call center policies?",
            &["30 days", "30"][..],
        ),
        (
            "[Doc 1] Logistics operations are scheduled to start in 2023.\n[Doc 2] Logistics team meeting notes, 10 April\nThe team discussed the logistics operations for the upcoming year, including the start date of 2023.\n[Doc 3] Proposal: logistics budget (approved)\nA proposal to increase the logistics budget by 10% was reviewed on 10 April and approved.\n[Doc 4] Logistics cluster sizing note\nThe logistics Kafka cluster grew from 10 to 12 brokers in February; each broker has 4 TB of disk and the replication factor stays at 3.\nQuestion: When do logistics operations start?",
            &["2023"][..],
        ),
    ] {
        assert_eq!(
            outcome(Category::MultiDocumentQa, &item(prompt, golds)),
            "ok",
            "{prompt}"
        );
    }
}

/// Run F's release (eleventh session): both panel models answered `3 years`, from the retention
/// sentence, for a topic that the audit snippet says is not encrypted at rest.
const DENIED_ENCRYPTION: &str = "[Doc 1] HIPAA compliance policy HIPAA-POLICY-123 (approved)\nHIPAA requires that all data be encrypted at rest and in transit. All data must be stored for at least 3 years.\n\n[Doc 2] HIPAA audit report, 3 March\nThe audit found that the eu.clickstream topic was not encrypted at rest. The eu.payments-audit topic was encrypted at rest.\n\n[Doc 3] HIPAA compliance notice, 3 March\nThe notice states that the eu.clickstream topic is not compliant with HIPAA. The eu.payments-audit topic is compliant with HIPAA.\n\n[Doc 4] HIPAA cluster sizing note\nThe EU Kafka cluster grew from 9 to 12 brokers in February; each broker has 4 TB of disk and the replication factor stays at 3.\n\nQuestion: Under the approved policy and the audit report, how long is the eu.clickstream topic encrypted at rest?";

#[test]
fn a_question_about_a_state_that_a_document_denies_is_rejected() {
    assert_eq!(
        outcome(
            Category::MultiDocumentQa,
            &item(DENIED_ENCRYPTION, &["3 years", "3-year"])
        ),
        "question_denied"
    );
    let asks_the_denial = DENIED_ENCRYPTION.replace(
        "how long is the eu.clickstream topic encrypted at rest?",
        "how long must the eu.clickstream topic's data be stored, though it is not encrypted at rest?",
    );
    assert_eq!(
        outcome(
            Category::MultiDocumentQa,
            &item(&asks_the_denial, &["3 years", "3-year"])
        ),
        "ok",
        "a question that negates asks about the denial"
    );
    let key_names_the_state = DENIED_ENCRYPTION.replace(
        "All data must be stored for at least 3 years.",
        "Data must be encrypted at rest within 3 years of collection.",
    );
    assert_eq!(
        outcome(
            Category::MultiDocumentQa,
            &item(&key_names_the_state, &["3 years", "3-year"])
        ),
        "ok",
        "the key's own sentence speaks of the state"
    );
}

#[test]
fn a_bare_one_or_two_digit_variant_beside_a_key_with_its_unit_is_dropped() {
    let prompt = "[Doc 1] Legal compliance policy\nThe company's legal compliance policy states that all documents must be reviewed and approved by legal staff before they can be released. The policy also requires that all documents must be stored for at least 5 years.\n\n[Doc 2] Legal compliance minutes, 2023-01-15\nThe legal compliance committee met on 2023-01-15 to review the legal compliance policy and discuss any issues that may arise. The committee agreed to review the policy and make any necessary changes.\n\n[Doc 3] Legal compliance report, 2023-01-30\nThe legal compliance team reviewed the documents and found that the policy was not being followed. The team recommended that the policy be updated and that all documents be reviewed and approved by legal staff before they can be released.\n\n[Doc 4] Legal compliance decision, 2023-02-01\nThe legal compliance committee made a decision to update the legal compliance policy and to review all documents and approve them before they can be released.\n\nQuestion: How many years must documents be stored according to the legal compliance policy?";
    assert_eq!(
        dropped_golds_of(Category::MultiDocumentQa, prompt, &["5 years", "5"]),
        Ok(vec!["5".to_string()]),
        "released with `5`, which grades `15 years` and `2025` correct"
    );
    assert_eq!(
        dropped_golds(&["20 dollars", "$20", "USD 20"]),
        Ok(vec![]),
        "variants that write their unit are how answers give the value"
    );
    assert_eq!(
        dropped_golds(&["400 days", "400"]),
        Ok(vec![]),
        "three digits are kept"
    );
}

/// A memory_update of the 1.5B author that both panel models passed (seed 20261212, released as
/// sas-local-0010): its variant `200` grades the storage size `200GB` correct.
#[test]
fn a_bare_number_variant_the_context_gives_to_something_else_is_dropped() {
    let prompt = "Memory:\n- cloud_provider: AWS\n- region: us-west-2\n- instance_type: t2.micro\n- storage_size: 100GB\n- network_bandwidth: 100Mbps\n\nUpdate from DevOps Ops (30 April): the instance type is now t2.large; the storage size is increased to 200GB; the network bandwidth is doubled to 200Mbps.\n\nQuestion: What is the current network bandwidth of the selected instance type?";
    let dropped = |prompt: &str, golds: &[&str]| {
        check_item(
            Category::MemoryUpdate,
            memory(prompt, golds, &golds[..1], &["100Mbps"]),
            &Rules::default(),
        )
        .map(|kept| {
            let dropped: Vec<String> = kept.dropped.into_iter().map(|d| d.gold).collect();
            (kept.item.golds, dropped)
        })
        .map_err(|r| r.reason.code())
    };
    let golds = ["200Mbps", "200 Mbps", "200"];
    assert_eq!(
        dropped(prompt, &golds),
        Ok((strings(&["200Mbps", "200 Mbps"]), strings(&["200"]))),
        "`200` would grade the storage size, 200GB"
    );
    let only_the_key = prompt.replace("increased to 200GB", "increased to 300GB");
    assert_eq!(
        dropped(&only_the_key, &golds),
        Ok((strings(&golds), Vec::new())),
        "where only the key holds the number, the bare number is its short form"
    );
    assert_eq!(
        dropped(prompt, &["200", "200"]),
        Ok((strings(&["200"]), Vec::new())),
        "a key that is itself the bare number says no more than its copy"
    );
}

/// The main job's long_document_qa record (released as sas-local-0001 of sha256 `9024ce51…`):
/// all three corrective actions are owned by Logistics, so "the corrective action that reduces
/// delivery delays" needs no choosing. 7 of the 10 owner questions of gate-valid long documents in
/// every cached run were of this kind.
#[test]
fn a_document_whose_every_slot_of_the_keys_kind_holds_the_key_has_no_distractor() {
    let prompt = "Logistics department's postmortem: delivery delays during the holiday season\n\nSummary. During the holiday season, the logistics department experienced significant delivery delays, with an estimated 1,500 orders being delayed by 3 days. The delays were caused by a combination of factors, including poor weather conditions, a shortage of delivery trucks, and a lack of proper storage facilities.\n\nImpact. Customers in all regions were affected. Delivery times were longer than usual, and some customers had to wait for multiple days before receiving their orders.\n\nRoot cause. The weather conditions were particularly harsh during the holiday season, which made it difficult for delivery trucks to operate safely. Additionally, the shortage of delivery trucks was due to a lack of inventory, which had been depleted by the end of the holiday season. The lack of proper storage facilities also contributed to the delays.\n\nTimeline. At 10:00 the delivery team received an alert about the high number of delayed orders. At 10:30 the team began investigating the cause of the delays. At 11:00 the team identified the root cause as poor weather conditions and a shortage of delivery trucks. At 11:30 the team implemented a plan to address the issue, including hiring additional delivery trucks and improving storage facilities. By 12:00 the delays were reduced to 1,000 orders, and the team began to recover from the impact of the holiday season.\n\nCorrective actions. (1) Hire additional delivery trucks; owner: Logistics; due 15 December. (2) Improve storage facilities; owner: Logistics; due 20 December. (3) Review and update delivery routes; owner: Logistics; due 25 December.\n\nQuestion: Which team is responsible for implementing the corrective action that reduces delivery delays?";
    assert_eq!(
        outcome(
            Category::LongDocumentQa,
            &item(prompt, &["Logistics", "Logistics team"])
        ),
        "no_distractors"
    );
    let owners = prompt
        .replacen("owner: Logistics", "owner: Fleet Operations", 1)
        .replacen(
            "owner: Logistics; due 25",
            "owner: Network Planning; due 25",
            1,
        );
    assert_eq!(
        outcome(
            Category::LongDocumentQa,
            &item(&owners, &["Logistics", "Logistics team"])
        ),
        "ok",
        "an action owned by another team is one to tell it from"
    );
    let prefix = prompt
        .replacen("owner: Logistics", "owner: Logistics Planning", 1)
        .replacen(
            "owner: Logistics; due 25",
            "owner: Logistics Planning; due 25",
            1,
        );
    assert_eq!(
        outcome(
            Category::LongDocumentQa,
            &item(&prefix, &["Logistics", "Logistics team"])
        ),
        "ok",
        "`Logistics Planning` is another team, not the key"
    );
}

#[test]
fn a_time_of_day_question_keyed_by_a_date_is_a_unit_mismatch() {
    let prompt = "Memory:\n- ERP: SAP ERP 2023\n- version: 2023.01.01\n- endpoint: /api/erp/v1\n- schedule: daily\n- owner: SAP\n- deadline: 2023-01-15\n\nUpdate from IT Ops (15 January): the ERP version is updated to 2023.02.01; the endpoint is changed to /api/erp/v2; the schedule is adjusted to weekly; the owner is changed to SAP; the deadline is extended to 2023-02-15.\n\nQuestion: By what time of day must this ERP system be updated to the latest version?";
    assert_eq!(
        outcome(
            Category::MemoryUpdate,
            &memory(prompt, &["2023-02-15"], &["2023-02-15"], &["2023-01-15"])
        ),
        "gold_unit_mismatch"
    );
    let by_date = prompt.replace("what time of day", "what date");
    assert_eq!(
        outcome(
            Category::MemoryUpdate,
            &memory(&by_date, &["2023-02-15"], &["2023-02-15"], &["2023-01-15"])
        ),
        "ok",
        "a question that asks for a date takes one"
    );
    let by_clock = prompt.replace(
        "the deadline is extended to 2023-02-15",
        "the update window moves from 17:00 to 15:30",
    );
    assert_eq!(
        outcome(
            Category::MemoryUpdate,
            &memory(&by_clock, &["15:30", "3:30 pm"], &["15:30"], &["17:00"])
        ),
        "ok",
        "a clock time answers it"
    );
}

/// A multi_document_qa reply of the 1.5B author (seed 20261210) that passed the gate and both
/// panel models: "How many successful transactions…" is asked for a count, and the key `70%` is
/// the share its snippet gives beside the count (100).
#[test]
fn a_count_question_keyed_by_a_percentage_is_a_unit_mismatch() {
    let prompt = "[Doc 1] Payment processing system PPS-001 (approved)\nPPS-001 processes payments for customers in the EU. It uses a custom payment gateway that supports multiple payment methods.\n\n[Doc 2] Payment gateway logs, 3 March\nThe gateway logged 100 successful transactions for the EU cluster on 3 March. The logs show that the gateway processed 70% of the transactions in the EU cluster.\n\n[Doc 3] Proposal: longer payment processing time (rejected)\nA proposal to increase the payment processing time for the EU cluster was reviewed on 3 March and rejected for cost reasons.\n\n[Doc 4] EU cluster sizing note\nThe EU Kafka cluster grew from 9 to 12 brokers in February; each broker has 4 TB of disk and the replication factor stays at 3.\n\nQuestion: How many successful transactions did the EU cluster process in the EU cluster on 3 March?";
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(prompt, &["70%", "70"])),
        "gold_unit_mismatch"
    );
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(prompt, &["100"])),
        "ok",
        "the count itself is the key"
    );
    let share = prompt.replace(
        "How many successful transactions did",
        "By how many percent of the transactions did",
    );
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(&share, &["70%", "70"])),
        "ok",
        "a question that asks how many percent names its unit"
    );
}

/// A multi_document_qa item the main job of 2026-12-06 (ninth session) released: Doc 1 is a
/// title with no text under it, above three titled documents. With text under its title, and
/// with every snippet a one-line sentence, the item passes.
#[test]
fn a_snippet_that_is_only_a_title_among_titled_documents_has_no_body() {
    const BARE: &str = "[Doc 1] CRM system version 2.0.1 (approved)\n[Doc 2] CRM system requirements\nThe CRM system requires a minimum of 500 GB of disk space and 2000 CPU cores for optimal performance. It supports up to 1000 users and 10000 contacts.\n[Doc 3] CRM system updates, 3 March\nThe CRM system was updated on 3 March to version 2.0.2. The update included bug fixes and performance improvements.\n[Doc 4] CRM system user training note\nThe CRM system requires 2 hours of user training for new employees.\nQuestion: What is the minimum disk space required for the CRM system version 2.0.1?";
    let golds = ["500 GB", "500GB"];
    let rejection = check_item(
        Category::MultiDocumentQa,
        item(BARE, &golds),
        &Rules::default(),
    )
    .map(|_| ())
    .expect_err("Doc 1 has no body");
    assert_eq!(rejection.reason.code(), "snippet_labels");
    assert!(
        rejection.detail.contains("snippet 1") && rejection.detail.contains("no body"),
        "{}",
        rejection.detail
    );
    let with_text = BARE.replace(
        "(approved)\n",
        "(approved)\nVersion 2.0.1 was approved by the change board and adds customer segmentation.\n",
    );
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(&with_text, &golds)),
        "ok"
    );
    let one_line_each = "[Doc 1] The CRM system version 2.0.1 was approved by the change board in March.\n[Doc 2] The CRM system requires a minimum of 500 GB of disk space and 2000 CPU cores for optimal performance.\n[Doc 3] The CRM system was updated on 3 March to version 2.0.2 with bug fixes and performance improvements.\n[Doc 4] The CRM system requires 2 hours of user training for new employees.\nQuestion: What is the minimum disk space required for the CRM system version 2.0.1?";
    assert_eq!(
        outcome(Category::MultiDocumentQa, &item(one_line_each, &golds)),
        "ok"
    );
}

/// A multi_document_qa item the main job of 2026-12-06 (ninth session) released: every snippet
/// states the key `Finance application`, written `'Finance' application`, whose quotes the
/// grader's normalisation turns into a second space. A snippet states the key whatever the
/// punctuation between its words.
#[test]
fn a_key_quoted_in_every_snippet_leaves_no_distractor() {
    const QUOTED: &str = "[Doc 1] IAM policy for user John Doe\nThe IAM policy for user John Doe allows access to the 'Finance' application, but not to the 'HR' application. The policy is valid for all users in the 'Finance' cluster.\n\n[Doc 2] Security team meeting notes, 24 February\nThe security team discussed the IAM policy for user John Doe. They noted that the policy allows access to the 'Finance' application, but not to the 'HR' application. The policy is valid for all users in the 'Finance' cluster.\n\n[Doc 3] IAM policy for user Jane Smith\nThe IAM policy for user Jane Smith allows access to the 'Finance' application, but not to the 'HR' application. The policy is valid for all users in the 'Finance' cluster.\n\n[Doc 4] Security team meeting notes, 25 February\nThe security team discussed the IAM policy for user Jane Smith. They noted that the policy allows access to the 'Finance' application, but not to the 'HR' application. The policy is valid for all users in the 'Finance' cluster.\n\nQuestion: What is the IAM policy for user John Doe?";
    assert_eq!(
        outcome(
            Category::MultiDocumentQa,
            &item(QUOTED, &["Finance application", "Finance"])
        ),
        "no_distractors"
    );
}

/// A technical_code item the main job of 2026-12-06 (ninth session) released: it asks for the
/// Terraform code to add, a block with many right forms, and its key `service` is a word of the
/// prompt. A question for a code-shaped token (a status, exit or error code) still passes.
#[test]
fn a_code_question_that_asks_for_code_to_write_has_no_single_answer() {
    for (prompt, gold) in [
        (
            "A developer is writing an IAM policy in Terraform. They want to ensure that the policy does not allow access to a specific service. What Terraform code should they add to the policy to achieve this?",
            "service",
        ),
        (
            "Our reporting job (PostgreSQL 15) must stop a runaway report after it holds locks for too long. What SQL query can be added to the job to force the report to be killed?",
            "pg_cancel_backend",
        ),
    ] {
        assert_eq!(
            outcome(Category::TechnicalCode, &item(prompt, &[gold])),
            "question_advice",
            "{prompt}"
        );
    }
    for (prompt, gold) in [
        (
            "Our billing API (Spring Boot 3.1) rejects a request whose client has sent too many calls in a minute. Which HTTP status code must the controller return?",
            "429",
        ),
        (
            "Our deploy script runs `terraform plan -detailed-exitcode` in CI (Terraform 1.6). Which exit code does the command return when the plan has changes?",
            "2",
        ),
    ] {
        assert_eq!(
            outcome(Category::TechnicalCode, &item(prompt, &[gold])),
            "ok",
            "{prompt}"
        );
    }
}
