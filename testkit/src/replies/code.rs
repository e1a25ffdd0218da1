//! The fake author's technical_code items: short questions whose answers are short tokens.

use super::*;

pub(super) struct CodeQuestion {
    pub(super) setups: [&'static str; 2],
    pub(super) question: &'static str,
    pub(super) golds: &'static [&'static str],
}

pub(super) const CODE_QUESTIONS: &[CodeQuestion] = &[
    CodeQuestion {
        setups: [
            "Our <svc> worker calls an upstream API like this:\n\n```python\nresp = requests.get(f\"{BASE_URL}/<entity>s/{<entity>_id}\")\nresp.raise_for_status()\n```\n\nDuring an upstream incident every worker hung indefinitely.",
            "In a code review for <svc>, <first> flagged this call:\n\n```python\ndef fetch_<entity>(<entity>_id):\n    return requests.get(f\"{API}/<entity>s/{<entity>_id}\", headers=HEADERS).json()\n```\n\nIf the remote end stops responding, the call never returns.",
        ],
        question: "Which keyword argument to `requests.get` bounds how long the call may wait?",
        golds: &["timeout", "timeout="],
    },
    CodeQuestion {
        setups: [
            "This Go handler in <svc> leaks file descriptors under load:\n\n```go\nresp, err := http.Get(url)\nif err != nil {\n    return err\n}\ndata, err := io.ReadAll(resp.Body)\n```",
            "The <team> sees `too many open files` from <svc> after a few hours. The client code is:\n\n```go\nresp, err := client.Do(req)\nif err != nil {\n    return nil, err\n}\nreturn decode<Entity>(resp.Body)\n```",
        ],
        question: "Which call should be deferred right after the error check to fix the leak?",
        golds: &["resp.Body.Close()", "Body.Close"],
    },
    CodeQuestion {
        setups: [
            "A pod of the <svc> deployment keeps restarting. `kubectl describe pod` shows the last state as terminated with exit code 137 right after memory use climbed past the container limit.",
            "The <svc> containers at <org> die during the nightly <entity> export; the node's kernel log shows the cgroup memory limit being hit, and the container exit code is 137.",
        ],
        question: "What termination reason does Kubernetes report for these restarts?",
        golds: &["OOMKilled", "OOM killed"],
    },
    CodeQuestion {
        setups: [
            "Uploads of large <entity> attachments through our nginx ingress in front of <svc> fail with HTTP 413.",
            "The <team> moved <svc> behind nginx, and now any request body above about one megabyte is rejected with 413 Request Entity Too Large.",
        ],
        question: "Which nginx directive raises the allowed request body size?",
        golds: &["client_max_body_size"],
    },
    CodeQuestion {
        setups: [
            "The <svc> connection pool logs `FATAL: sorry, too many clients already` from PostgreSQL during traffic spikes.",
            "After <org> scaled <svc> out, new database sessions started failing with `remaining connection slots are reserved for non-replication superuser connections`.",
        ],
        question: "Which postgresql.conf setting caps the number of concurrent connections?",
        golds: &["max_connections"],
    },
    CodeQuestion {
        setups: [
            "```java\nfor (<Entity> item : <entity>s) {\n    if (item.isExpired()) {\n        <entity>s.remove(item);\n    }\n}\n```\n\nThis loop in <svc> removes expired records from an `ArrayList`.",
            "<first> wrote this cleanup job for <svc>:\n\n```java\n<entity>Cache.keySet().forEach(key -> {\n    if (isStale(key)) <entity>Cache.remove(key);\n});\n```\n\nThe map is a plain `HashMap`.",
        ],
        question: "Which exception does this code typically throw at runtime?",
        golds: &["ConcurrentModificationException"],
    },
    CodeQuestion {
        setups: [
            "Two engineers rebased the same <svc> feature branch, and one of them is about to push the rewritten history.",
            "The <team> allows force pushes on feature branches of <svc>, but wants to avoid clobbering commits a teammate pushed in the meantime.",
        ],
        question: "Which git push flag overwrites the remote branch only if it still matches what you last fetched?",
        golds: &["--force-with-lease", "force-with-lease"],
    },
    CodeQuestion {
        setups: [
            "In <svc> we call `let cfg = load_config()?;` inside a function returning `Result<(), AppError>`, but `load_config` returns `Result<Config, std::io::Error>`, and the build fails.",
            "A Rust handler in <svc> returns `Result<<Entity>, ApiError>` and uses `?` on a `serde_json::Error`; the compiler says the `?` couldn't convert the error.",
        ],
        question: "Which standard trait must the application's error type implement for `?` to convert the error?",
        golds: &["From", "From trait"],
    },
    CodeQuestion {
        setups: [
            "The <svc> database is managed with Terraform, and a refactor nearly replaced it last week.",
            "<first> wants Terraform to refuse any plan that would delete the production bucket behind <svc>.",
        ],
        question: "Which lifecycle meta-argument makes Terraform refuse to destroy the resource?",
        golds: &["prevent_destroy"],
    },
    CodeQuestion {
        setups: [
            "Browser calls from the <org> customer portal to <svc> fail with a CORS error, although the same requests succeed from curl.",
            "The new single-page app for the <system> gets `blocked by CORS policy` when it calls <svc> on another subdomain.",
        ],
        question: "Which response header must the API return to allow the portal's origin?",
        golds: &["Access-Control-Allow-Origin"],
    },
    CodeQuestion {
        setups: [
            "Inserting a duplicate <entity> reference into <svc>'s PostgreSQL table fails with a unique constraint violation.",
            "The <svc> importer retries when PostgreSQL reports that a duplicate key value violates a unique constraint, and the retry logic matches on the error's SQLSTATE.",
        ],
        question: "Which SQLSTATE code does PostgreSQL report for a unique violation?",
        golds: &["23505", "SQLSTATE 23505"],
    },
    CodeQuestion {
        setups: [
            "```ini\n[Service]\nExecStart=/usr/local/bin/<svc>\nUser=<entity>svc\n```\n\nWhen the <svc> daemon crashes, it stays down until someone restarts it by hand.",
            "The systemd unit for <svc> on the <org> hosts has only `ExecStart` and `User` in its `[Service]` section, and the daemon stays down after a crash.",
        ],
        question: "Which systemd directive brings the service back automatically after a crash?",
        golds: &["Restart=on-failure", "Restart"],
    },
    CodeQuestion {
        setups: [
            "Tests of the <svc> package pass locally but fail randomly in CI, and the <team> suspects two goroutines write the same <entity> map.",
            "<first> wants CI to catch unsynchronised access to shared state in the Go code of <svc>.",
        ],
        question: "Which flag makes `go test` instrument the code to detect data races?",
        golds: &["-race", "go test -race"],
    },
    CodeQuestion {
        setups: [
            "A new Kafka consumer group for <svc> starts with no committed offsets and must read the <entity> topic from the beginning.",
            "The <team> deployed a fresh consumer group for <svc>, and it skipped every <entity> event produced before it started.",
        ],
        question: "Which consumer property must be set to `earliest`?",
        golds: &["auto.offset.reset"],
    },
    CodeQuestion {
        setups: [
            "<svc> stores session data in Redis under keys such as `<entity>:session:abc`, and the keys must disappear after thirty minutes.",
            "The <team> caches <entity> lookups in Redis with `SET`, and needs to give an existing key a time-to-live afterwards.",
        ],
        question: "Which Redis command sets a time-to-live on an existing key?",
        golds: &["EXPIRE", "EXPIRE command"],
    },
    CodeQuestion {
        setups: [
            "<svc> validates JWTs issued by the <org> identity provider and must reject tokens past their lifetime.",
            "A security review of <svc> found that it accepts JWTs long after they should have lapsed.",
        ],
        question: "Which registered JWT claim holds the token's expiration time?",
        golds: &["exp", "exp claim"],
    },
    CodeQuestion {
        setups: [
            "A gRPC call from <svc> to the <entity> service gives up once the client-side deadline passes.",
            "Latency spikes in the <system> make <svc>'s gRPC calls exceed the two-second budget set by the caller.",
        ],
        question: "Which gRPC status code does the client observe?",
        golds: &["DEADLINE_EXCEEDED", "deadline exceeded"],
    },
    CodeQuestion {
        setups: [
            "```java\n@Service\npublic class <Entity>Service {\n    public void save<Entity>(<Entity> e) {\n        repo.save(e);\n        audit.record(e);\n    }\n}\n```\n\nIf `audit.record` throws, the saved row stays behind in <svc>.",
            "In the Spring Boot code of <svc>, two repository writes must commit or roll back together.",
        ],
        question: "Which Spring annotation makes the method run inside one database transaction?",
        golds: &["@Transactional", "Transactional"],
    },
    CodeQuestion {
        setups: [
            "```python\nlimits = {\"standard\": 100, \"premium\": 500}\nprint(limits[tier])\n```\n\nThis snippet from <svc> crashes when `tier` is `\"enterprise\"`.",
            "<first>'s script for <svc> looks up `<entity>_by_id[request_id]` in a plain dict, and it crashes for ids that were never loaded.",
        ],
        question: "Which Python exception is raised?",
        golds: &["KeyError"],
    },
    CodeQuestion {
        setups: [
            "<svc> receives a request whose bearer token has expired.",
            "A client calls <svc> without any credentials at all, on an endpoint that requires a signed-in user.",
        ],
        question: "Which HTTP status code should the API return?",
        golds: &["401", "HTTP 401"],
    },
    CodeQuestion {
        setups: [
            "The <svc> image should run `serve --port 8080` by default, but operators must be able to replace those arguments on the `docker run` command line.",
            "<first> is writing the Dockerfile for <svc> and wants default arguments that `docker run <svc> migrate` replaces.",
        ],
        question: "Which Dockerfile instruction supplies those replaceable defaults?",
        golds: &["CMD", "CMD instruction"],
    },
    CodeQuestion {
        setups: [
            "New <svc> pods receive traffic before their caches are warm, and the first requests time out.",
            "The <team> wants Kubernetes to keep a <svc> pod out of the Service endpoints until it has loaded its <entity> index.",
        ],
        question: "Which Kubernetes probe controls whether the pod receives traffic?",
        golds: &["readiness probe", "readiness"],
    },
    CodeQuestion {
        setups: [
            "```javascript\n<entity>s.forEach(async (x) => {\n  await save(x);\n});\nconsole.log('done');\n```\n\nIn <svc>, 'done' prints before any save finishes.",
            "<first> noticed that the Node.js export job in <svc> reports success while `await`s inside `Array.prototype.forEach` are still pending.",
        ],
        question: "Which loop construct should replace `forEach` so that each await is respected?",
        golds: &["for...of", "for of"],
    },
    CodeQuestion {
        setups: [
            "The <team> needs a report from the <system> that keeps only accounts whose summed <entity> totals exceed a threshold.",
            "```sql\nSELECT account_id, SUM(amount) AS total\nFROM <entity>s\nGROUP BY account_id\n-- keep only totals above 10000\n```\n\n<first> tried `WHERE SUM(amount) > 10000` and got an error.",
        ],
        question: "Which SQL clause filters groups after aggregation?",
        golds: &["HAVING", "HAVING clause"],
    },
    CodeQuestion {
        setups: [
            "The <svc> deployment runs a fixed number of replicas, and the <team> wants Kubernetes to add pods when average CPU utilisation rises.",
            "<org> wants <svc> to scale out automatically during the <entity> rush instead of paging someone to edit the replica count.",
        ],
        question: "Which Kubernetes resource scales the number of pods based on CPU utilisation?",
        golds: &["HorizontalPodAutoscaler", "Horizontal Pod Autoscaler"],
    },
];

pub(super) const CODE_ASKS: &[&str] = &[
    "<first> needs the exact identifier for the <system> runbook.",
    "The <team> wants the precise name so it can search the code base for it.",
    "Please give the exact term; <first2> will add it to the <org> wiki.",
    "This is blocking the next <svc> release at <org>.",
    "A short answer is enough for the <team>.",
    "<first2> on the <team> wants to confirm before changing <svc>.",
];

pub(super) const CODE_LEADS: &[&str] = &[
    "Code review question from the <team>. ",
    "Debugging <org>'s <system>. ",
    "<first> from the <team> is stuck on this one. ",
    "Asked in the <svc> engineering channel by <first2>: ",
    "While on call for the <system>, <first> ran into the following. ",
    "From a pairing session on <svc> at <org>. ",
    "A question from the <team>'s onboarding exercises for the <system>. ",
    "Postmortem follow-up for <svc>: ",
];

pub(super) fn technical_code(pick: &mut Pick, ctx: &Ctx) -> Item {
    let question = &CODE_QUESTIONS[ctx.turn(CODE_QUESTIONS.len())];
    let lead = ctx.fill(pick.one(CODE_LEADS));
    let setup = ctx.fill(pick.one(&question.setups));
    let ask = ctx.fill(pick.one(CODE_ASKS));
    Item::plain(
        format!("{lead}{setup}\n\n{} {ask}", question.question),
        strings(question.golds),
    )
}
