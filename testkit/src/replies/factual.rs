//! The fake author's simple_factual and bloated_factual items (the bloated ones wrapped in
//! corporate filler).

use super::*;

pub(super) struct Fact {
    pub(super) questions: [&'static str; 2],
    pub(super) golds: &'static [&'static str],
}

pub(super) const FACTS: &[Fact] = &[
    Fact { questions: ["On which TCP port does a default PostgreSQL server accept client connections?", "What port number does PostgreSQL listen on when left at its default configuration?"], golds: &["5432", "port 5432"] },
    Fact { questions: ["Which TCP port does a stock Redis server listen on?", "What is the default port number for a Redis instance?"], golds: &["6379", "port 6379"] },
    Fact { questions: ["Which HTTP status code tells a client it has exceeded its rate limit?", "What HTTP response code should an API return when a caller is being throttled for sending too many calls?"], golds: &["429", "HTTP 429"] },
    Fact { questions: ["Which port does an Apache Kafka broker listen on by default?", "What is the default client listener port of a Kafka broker?"], golds: &["9092", "port 9092"] },
    Fact { questions: ["What is the AWS region code for US East (N. Virginia)?", "Which AWS region identifier corresponds to the Northern Virginia region?"], golds: &["us-east-1", "us east 1"] },
    Fact { questions: ["Which port does MySQL use by default for client connections?", "What is the default TCP port of a MySQL server?"], golds: &["3306", "port 3306"] },
    Fact { questions: ["Which TCP port does HTTPS use by default?", "On what port do web servers accept TLS-encrypted web traffic unless configured otherwise?"], golds: &["443", "port 443"] },
    Fact { questions: ["In disaster recovery terms, what does the abbreviation RPO stand for?", "What is the expanded form of RPO in business continuity work?"], golds: &["recovery point objective"] },
    Fact { questions: ["Which HTTP status code indicates that a POST request successfully created a resource?", "What status code should a REST API return after it creates a new resource?"], golds: &["201", "HTTP 201"] },
    Fact { questions: ["Which OAuth grant type is meant for machine-to-machine calls with no user present?", "What OAuth flow should a backend job use to obtain a token for itself, without any user involved?"], golds: &["client credentials", "client_credentials"] },
    Fact { questions: ["Which git command creates a new commit that undoes the changes of an earlier commit?", "What git subcommand safely backs out an already-pushed commit by adding an inverse commit?"], golds: &["git revert", "revert"] },
    Fact { questions: ["Roughly how many minutes of downtime per year does a five-nines availability target allow?", "About how many minutes of annual downtime fit within five nines of availability?"], golds: &["5.26 minutes", "5.26"] },
    Fact { questions: ["Which port does Elasticsearch expose its REST API on by default?", "On what default port does an Elasticsearch node serve HTTP calls?"], golds: &["9200", "port 9200"] },
    Fact { questions: ["Which DNS record type maps a hostname to an IPv6 address?", "What DNS resource record holds the IPv6 address of a host?"], golds: &["AAAA", "AAAA record"] },
    Fact { questions: ["In which year does the Unix epoch begin?", "Unix timestamps count seconds from the start of which year?"], golds: &["1970"] },
    Fact { questions: ["How many bits long is an IPv6 address?", "What is the bit length of an IPv6 address?"], golds: &["128", "128 bits"] },
    Fact { questions: ["Which ANSI X12 transaction set is the advance ship notice?", "What X12 EDI document number do suppliers send as an advance ship notice?"], golds: &["856", "EDI 856"] },
    Fact { questions: ["Which ANSI X12 transaction set carries a healthcare claim?", "What X12 EDI transaction do providers submit for professional and institutional claims?"], golds: &["837", "EDI 837"] },
    Fact { questions: ["Which ISO 20022 message type does a corporate send to initiate customer credit transfers?", "What ISO 20022 message initiates a customer credit transfer from a company to its bank?"], golds: &["pain.001", "pain 001"] },
    Fact { questions: ["Which ISO standard defines the messages exchanged between card acquirers and issuers?", "What ISO standard governs card-originated financial transaction messages?"], golds: &["ISO 8583", "8583"] },
    Fact { questions: ["Which Kubernetes probe makes the kubelet restart a container when it fails?", "What kind of Kubernetes health check restarts a container that has stopped responding?"], golds: &["liveness probe", "liveness"] },
    Fact { questions: ["Which port does RabbitMQ use for AMQP connections by default?", "What is RabbitMQ's default AMQP listener port?"], golds: &["5672", "port 5672"] },
    Fact { questions: ["What is the maximum number of characters in an IBAN?", "At most how many characters long can an International Bank Account Number be?"], golds: &["34 characters", "34"] },
    Fact { questions: ["Which HTTP status code means the service is temporarily unavailable?", "What status code should a load balancer return when no healthy backend can take the call?"], golds: &["503", "HTTP 503"] },
    Fact { questions: ["Which TCP port does LDAP over SSL use by default?", "What is the default port for LDAPS?"], golds: &["636", "port 636"] },
    Fact { questions: ["Which SQL transaction isolation level prevents phantom reads?", "What is the strictest isolation level defined by the SQL standard?"], golds: &["serializable"] },
    Fact { questions: ["Which consensus algorithm does etcd use to replicate its data?", "What consensus protocol keeps the members of an etcd cluster in agreement?"], golds: &["Raft", "Raft consensus"] },
    Fact { questions: ["Which port is reserved for mail submission by email clients?", "On which port should mail clients submit outgoing messages to an SMTP relay?"], golds: &["587", "port 587"] },
    Fact { questions: ["Which port does a Prometheus server listen on by default?", "What is the default web port of Prometheus?"], golds: &["9090", "port 9090"] },
    Fact { questions: ["For how many years must HIPAA-covered entities keep required compliance documentation?", "How long does HIPAA require policy and procedure documentation to be retained?"], golds: &["6 years"] },
    Fact { questions: ["Which Incoterms rule makes the buyer responsible for everything from the seller's premises onward?", "Under which Incoterms rule does the seller only make the goods available at its own premises?"], golds: &["EXW", "Ex Works"] },
    Fact { questions: ["Which Terraform subcommand previews infrastructure changes without applying them?", "What Terraform command shows the execution diff before anything is changed?"], golds: &["terraform plan"] },
    Fact { questions: ["Within how many hours must a GDPR controller notify the supervisory authority of a personal data breach?", "What is the GDPR deadline for reporting a personal data breach to the regulator?"], golds: &["72 hours", "72-hour"] },
    Fact { questions: ["Which security standard governs how merchants store and transmit cardholder data?", "Which compliance standard applies to any system that processes payment card numbers?"], golds: &["PCI DSS", "PCI-DSS"] },
    Fact { questions: ["Which US federal law sets the privacy and security rules for protected health information?", "Which American statute governs the handling of patient health records by covered entities?"], golds: &["HIPAA"] },
    Fact { questions: ["Which Kubernetes workload object runs exactly one pod on every node?", "What Kubernetes controller should deploy a log collector to each node in a cluster?"], golds: &["DaemonSet", "daemon set"] },
    Fact { questions: ["Which HTTP request header carries a bearer token to an API?", "In which request header does a client send its OAuth access token?"], golds: &["Authorization", "Authorization header"] },
    Fact { questions: ["Which XML-based standard do enterprise identity providers use for browser single sign-on assertions?", "What federation protocol exchanges signed XML assertions between an identity provider and a service provider?"], golds: &["SAML", "SAML 2.0"] },
    Fact { questions: ["Which TCP port does an SSH server listen on by default?", "On what port do OpenSSH daemons accept connections unless told otherwise?"], golds: &["22", "port 22"] },
    Fact { questions: ["Which port do DNS servers answer queries on?", "What is the well-known port number of the Domain Name System?"], golds: &["53", "port 53"] },
    Fact { questions: ["Which UDP port does the Network Time Protocol use?", "On what port do NTP servers answer time requests?"], golds: &["123", "port 123"] },
    Fact { questions: ["Which TCP port does IMAP over TLS use by default?", "What is the default port of IMAPS?"], golds: &["993", "port 993"] },
    Fact { questions: ["Which TCP port does the Remote Desktop Protocol listen on by default?", "On what port does Windows Remote Desktop accept connections out of the box?"], golds: &["3389", "port 3389"] },
    Fact { questions: ["Which TCP port does Microsoft SQL Server listen on by default?", "What is the default port of a SQL Server database engine instance?"], golds: &["1433", "port 1433"] },
    Fact { questions: ["Which port does an Oracle Database listener use by default?", "What is the default port of the Oracle TNS listener?"], golds: &["1521", "port 1521"] },
    Fact { questions: ["Which port do ZooKeeper clients connect to by default?", "What is ZooKeeper's default client port?"], golds: &["2181", "port 2181"] },
    Fact { questions: ["Which port does memcached listen on by default?", "What is the default TCP port of a memcached server?"], golds: &["11211", "port 11211"] },
    Fact { questions: ["Which HTTP status code means the requested resource was not found?", "What status code does a web server return for a URL that does not exist?"], golds: &["404", "HTTP 404"] },
    Fact { questions: ["Which HTTP status code tells a client that it must authenticate first?", "What status code does an API return to a call that carries no credentials at all?"], golds: &["401", "HTTP 401"] },
    Fact { questions: ["Which HTTP status code marks a permanent redirect that may change the method to GET?", "What status code tells browsers that a page has moved for good?"], golds: &["301", "HTTP 301"] },
    Fact { questions: ["Which HTTP status code answers a conditional request whose cached copy is still fresh?", "What status code lets a server tell a client that its cached copy has not changed?"], golds: &["304", "HTTP 304"] },
    Fact { questions: ["Which DNS record type names the mail servers of a domain?", "What DNS resource record tells senders where to deliver a domain's email?"], golds: &["MX", "MX record"] },
    Fact { questions: ["Which DNS record type makes one hostname an alias of another?", "What DNS resource record points an alias name at a canonical name?"], golds: &["CNAME", "CNAME record"] },
    Fact { questions: ["Which git command fetches a remote branch and merges it into the current one?", "What git subcommand downloads and integrates the changes of the upstream branch in one step?"], golds: &["git pull", "pull"] },
    Fact { questions: ["Which Kubernetes object stores non-confidential configuration as key-value pairs?", "What Kubernetes resource holds plain configuration data that pods read as environment variables or files?"], golds: &["ConfigMap", "config map"] },
    Fact { questions: ["Which signal does the kill command send when no signal is named?", "What Unix signal asks a process to terminate when kill is run without options?"], golds: &["SIGTERM", "TERM"] },
    Fact { questions: ["Which TLS version does RFC 8446 define?", "What version of Transport Layer Security was published as RFC 8446?"], golds: &["TLS 1.3", "1.3"] },
    Fact { questions: ["Which HTTP method replaces a resource with the request's body and is idempotent?", "What HTTP verb uploads a complete new version of a resource at a known URL?"], golds: &["PUT", "HTTP PUT"] },
    Fact { questions: ["Which port does a MongoDB server listen on by default?", "What is the default port for the mongod process?"], golds: &["27017", "port 27017"] },
    Fact { questions: ["Which ISO standard specifies the requirements for an information security management system?", "Which international standard do auditors certify an ISMS against?"], golds: &["ISO 27001", "ISO/IEC 27001", "27001"] },
];

pub(super) const FACT_LEADS: &[&str] = &[
    "<first> is writing the <system> runbook for the <team> and asks:",
    "Question from a new joiner on the <team> at <org>, who is learning the <system>:",
    "Quick one from <first> on the <team> while we update the <system> runbook:",
    "<first> asked this during the <system> review at <org>:",
    "For the <org> onboarding checklist that <first> maintains for the <team>:",
    "<first2> is documenting the dependencies of the <system> at <org>.",
    "Sanity check from <first> for the <system> migration at <org>:",
    "From the <org> engineering FAQ, in the section on the <system>:",
    "Settling a debate on the <team> at <org>, started by <first2>:",
];

pub(super) fn fact_question(pick: &mut Pick, ctx: &Ctx) -> (String, Vec<String>) {
    let fact = &FACTS[ctx.fact % FACTS.len()];
    let lead = ctx.fill(pick.one(FACT_LEADS));
    let question = pick.one(&fact.questions);
    let prompt = if lead.is_empty() {
        question.to_string()
    } else {
        format!("{lead} {question}")
    };
    (prompt, strings(fact.golds))
}

pub(super) fn simple_factual(pick: &mut Pick, ctx: &Ctx) -> Item {
    let (prompt, golds) = fact_question(pick, ctx);
    Item::plain(prompt, golds)
}

pub(super) fn bloated_factual(pick: &mut Pick, ctx: &Ctx) -> Item {
    let fact = &FACTS[ctx.fact % FACTS.len()];
    let question = pick.one(&fact.questions).to_string();
    Item::plain(
        corporate_email(pick, ctx, &question, 160),
        strings(fact.golds),
    )
}

// ---------------------------------------------------------------------------------------------
// Corporate filler. Free of digits and of every reasoning kind's marker phrase, so the verifier
// finds only the problem's own numbers.
// ---------------------------------------------------------------------------------------------

pub(super) const GREETINGS: &[&str] = &["Hi", "Hello", "Good morning", "Dear", "Hey"];

pub(super) const OPENERS: &[&str] = &[
    "I hope this message finds you well and that the week has been treating you kindly so far.",
    "I hope you had a restful weekend and that things are not too hectic on your side at the moment.",
    "Thank you again for all the help you gave our group last month; it made a real difference to how smoothly things went.",
    "I wanted to reach out personally rather than open a ticket, since I know how busy the queue has been lately.",
    "Apologies for the unsolicited note, and thank you in advance for taking a moment to read it.",
    "I trust all is well with you and the rest of the team after what I hear was a very busy quarter.",
    "First of all, congratulations to you and the team on the recent launch; the feedback from customers has been wonderful.",
    "I am writing on behalf of a few colleagues who have been discussing this topic in our last couple of stand-ups.",
];

pub(super) const BACKGROUND: &[&str] = &[
    "As you may know, the <team> has been working through a broad review of the <system> so that our documentation reflects how things actually work today.",
    "We are putting together an internal knowledge base for new joiners at <org>, and several of the entries touch on basic facts that nobody has written down in one place.",
    "Leadership has asked each group to double-check the assumptions in its operating procedures before the next round of audits.",
    "Our onboarding sessions keep surfacing the same handful of questions, and I would like to give people a clear and consistent answer.",
    "Some of this came up during a vendor call yesterday, and I realised I was not completely certain of the details myself.",
    "I have looked through the wiki and a few older slide decks, but the information there is inconsistent and in places clearly outdated.",
    "I would rather confirm this with someone who knows the area well than guess and spread the wrong information across the organisation.",
    "Nothing is on fire, so please do not feel any pressure to drop what you are working on.",
    "The question itself is probably simple for you, but it has caused a surprising amount of back-and-forth on our side.",
    "We are also trying to align the wording across the <system> runbooks so that on-call engineers see the same terms everywhere.",
    "Our security and compliance colleagues have asked to be copied on the final answer, so I will share whatever you send with them as well.",
    "I promised the group a definitive answer by the end of the week, which is why I am reaching out to you directly.",
    "For context, <first2> from the <team> suggested that you would be the best person to ask, given your experience with the <system>.",
    "We held a short retrospective on this last week, and everyone agreed that a written answer from an expert would settle things for good.",
];

pub(super) const ASKS: &[&str] = &[
    "My question is simply this:",
    "Could you please confirm the following for me?",
    "Here is what we would like to know.",
    "So, to put it as simply as I can:",
    "The specific point I need help with is this one.",
];

pub(super) const THANKS: &[&str] = &[
    "I really appreciate you taking the time to look at this, and I am happy to jump on a short call if that would be easier for you.",
    "Thank you so much for your patience with what is probably a very basic question.",
    "Any pointers to official documentation would also be very welcome, though a short answer is perfectly fine.",
    "Please let me know if anything about the question is unclear or if I should be asking someone else instead.",
];

pub(super) const CLOSINGS: &[&str] = &[
    "Thanks again, and I hope the rest of your week goes smoothly.",
    "Looking forward to hearing from you whenever you have a spare moment.",
    "Many thanks in advance for your help with this.",
];

pub(super) const SIGNOFFS: &[&str] = &[
    "Best regards",
    "Kind regards",
    "Warm regards",
    "Many thanks",
    "Cheers",
    "All the best",
];

pub(super) const TITLES: &[&str] = &[
    "Senior Program Manager",
    "Engineering Manager",
    "Operations Lead",
    "Compliance Analyst",
    "Solutions Architect",
    "Director of Platform Operations",
    "Technical Account Manager",
    "Business Analyst",
];

/// `core` wrapped in a polite email of at least `min_words` words.
pub(super) fn corporate_email(pick: &mut Pick, ctx: &Ctx, core: &str, min_words: usize) -> String {
    let recipient = ctx.person(2).first;
    let sender = ctx.person(3).full();
    let opener = pick.one(OPENERS);
    let background_order = pick.distinct(BACKGROUND.len(), BACKGROUND.len());
    let ask = pick.one(ASKS);
    let thanks = pick.one(THANKS);
    let closing = pick.one(CLOSINGS);
    let signature = format!(
        "{},\n{sender}\n{}, {}",
        pick.one(SIGNOFFS),
        pick.one(TITLES),
        ctx.org
    );
    let fixed_words = [opener, ask, thanks, closing, core]
        .iter()
        .map(|text| text.split_whitespace().count())
        .sum::<usize>()
        + signature.split_whitespace().count()
        + 2;
    let mut background = Vec::new();
    let mut words = fixed_words;
    for index in background_order {
        if words >= min_words && background.len() >= 2 {
            break;
        }
        let sentence = ctx.fill(BACKGROUND[index]);
        words += sentence.split_whitespace().count();
        background.push(sentence);
    }
    let split = background.len() / 2;
    format!(
        "{} {recipient},\n\n{opener} {}\n\n{}\n\n{ask} {core}\n\n{thanks} {closing}\n\n{signature}",
        pick.one(GREETINGS),
        background[..split].join(" "),
        background[split..].join(" "),
    )
}
