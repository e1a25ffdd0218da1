//! The key and a hostile server: the key never reaches a file or the terminal (even when a server
//! echoes it), goes over trusted TLS only and never follows a redirect; a wrong or too-short key
//! stops before any batch; server-given ids and symbolic links never write outside the out dir.

use std::collections::BTreeMap;
use std::process::Command;

use saseval_testkit::fake_api::{FakeApi, Fault, Route};

use crate::bar::{files_outside, Bar};
use crate::responders::{good_responder, responder_with_one_failure};
use crate::world::{all_files, count_by_category, stable, World, KEY};

#[test]
fn the_api_key_never_reaches_a_file_or_the_terminal() {
    let fake = FakeApi::start(good_responder());
    fake.set_expected_key(KEY);
    let world = World::new(&fake);
    let run = world.run_env(&["run"], &[("RUST_LOG", "trace")]);
    run.success();
    assert!(
        !run.stdout.contains(KEY) && !run.stderr.contains(KEY),
        "the key was printed"
    );
    for file in all_files(&world.out()) {
        let bytes = std::fs::read(&file).expect("readable");
        let found = bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes());
        assert!(!found, "the key is in {}", file.display());
    }
    assert_eq!(
        fake.counters().unauthorized,
        0,
        "every request carried the key"
    );
}

#[test]
fn a_server_that_echoes_the_key_never_gets_it_into_a_file_or_the_terminal() {
    type Scenario = (&'static str, Vec<Fault>, i32);
    let scenarios: Vec<Scenario> = vec![
        (
            "400 and 500 bodies and output lines",
            vec![
                Fault::EchoKeyInError {
                    route: Route::ListFiles,
                    status: 400,
                    times: 1,
                },
                Fault::EchoKeyInError {
                    route: Route::GetBatch,
                    status: 500,
                    times: 2,
                },
                Fault::EchoKeyInOutput,
            ],
            0,
        ),
        (
            "a failed batch's errors",
            vec![Fault::FailNextBatchEchoingKey],
            1,
        ),
        (
            "the body of a refused create",
            vec![Fault::EchoKeyInError {
                route: Route::CreateBatch,
                status: 400,
                times: 1,
            }],
            1,
        ),
    ];
    for (what, faults, code) in scenarios {
        let fake = FakeApi::start(good_responder());
        fake.set_expected_key(KEY);
        let fault_count = faults.len();
        for fault in faults {
            fake.push_fault(fault);
        }
        let world = World::new(&fake);
        let bar = Bar::before(&world);
        let run = bar.ran(world.run_env(&["author"], &[("RUST_LOG", "debug")]));
        run.code(code);
        assert!(
            fake.counters().faults_fired >= fault_count,
            "{what}: the fake echoed the key"
        );
        bar.after();
        if code == 0 {
            bar.nothing_lost(&fake);
        }
        let redacted = run.stderr.contains("[redacted]")
            || all_files(&world.out())
                .iter()
                .any(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains("[redacted]")));
        assert!(redacted, "{what}: the echo is shown redacted");
    }
}

#[test]
fn a_wrong_key_stops_with_the_servers_message_and_exit_2() {
    let fake = FakeApi::start(good_responder());
    fake.set_expected_key("sk-the-right-one");
    let world = World::new(&fake);
    let run = world.run(&["author"]);
    insta::assert_snapshot!(
        "a_wrong_key",
        stable(&world, Some(&fake), &run.exit_and_stderr())
    );
    assert_eq!(fake.counters().batches_created, 0);
}

#[test]
fn a_key_too_short_to_redact_safely_is_refused_before_any_request() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake);
    let bar = Bar::before(&world);
    let run = bar.ran(world.run_env(&["author"], &[("SASEVAL_TEST_KEY", "abc")]));
    insta::assert_snapshot!(
        "a_key_too_short_to_redact",
        stable(&world, Some(&fake), &run.exit_and_stderr())
    );
    bar.after();
    assert_eq!(fake.counters().http_requests, 0);
}

#[test]
fn an_https_endpoint_with_an_untrusted_certificate_is_refused_at_once() {
    for (tool, arg) in [("openssl", "version"), ("python3", "--version")] {
        let found = Command::new(tool)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(found, "the TLS test needs {tool}: run scripts/setup.sh");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (cert, key, log, connections) = (
        dir.path().join("cert.pem"),
        dir.path().join("key.pem"),
        dir.path().join("requests.log"),
        dir.path().join("connections.log"),
    );
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let server = r#"
import http.server, ssl, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self):
        open(sys.argv[3], "a").write(self.path + "\n")
        self.send_response(200); self.end_headers(); self.wfile.write(b"{}")
    do_GET = do_POST = answer
    def log_message(self, *args): pass
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
class Server(http.server.HTTPServer):
    def get_request(self):
        sock, addr = self.socket.accept()
        open(sys.argv[4], "a").write("connection\n")
        return context.wrap_socket(sock, server_side=True), addr
server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;
    let mut child = Command::new("python3")
        .args(["-c", server])
        .arg(&cert)
        .arg(&key)
        .arg(&log)
        .arg(&connections)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 starts");
    let mut port = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut port,
    )
    .expect("port");
    let world =
        World::with_url(format!("https://127.0.0.1:{}/v1", port.trim())).set("api.max_retries=5");
    let run = world.run(&["author"]);
    let _ = child.kill();
    let _ = child.wait();
    run.code(1)
        .stderr_has("certificate is not trusted")
        .stderr_has("api.base_url");
    assert!(
        !log.exists(),
        "no request reached a server whose certificate is not trusted"
    );
    let attempts = std::fs::read_to_string(&connections).unwrap_or_default();
    assert_eq!(
        attempts.lines().count(),
        1,
        "a certificate error fails at once instead of being retried"
    );
}

#[test]
fn a_redirect_is_reported_with_where_it_points_not_as_a_bad_key() {
    let elsewhere = FakeApi::start(good_responder());
    elsewhere.set_expected_key(KEY);
    let fake = FakeApi::start(good_responder());
    let location = format!("{}/files", elsewhere.base_url());
    fake.push_fault(Fault::Redirect {
        route: Route::Any,
        location: location.clone(),
        times: 100,
    });
    let world = World::new(&fake);
    let bar = Bar::before(&world);
    let run = bar.ran(world.run(&["author"]));
    run.code(2).stderr_has("redirected").stderr_has(&location);
    bar.after();
    assert!(!run.stderr.contains("check the key"), "{}", run.stderr);
    assert_eq!(
        elsewhere.counters().http_requests,
        0,
        "the redirect was not followed"
    );
}

#[test]
fn server_given_file_ids_never_write_outside_the_out_dir() {
    let probe = tempfile::tempdir().expect("temp dir");
    let dir = probe.path().display().to_string();
    let cases = [
        (
            "../../../victim".to_string(),
            "../../../victim-errors".to_string(),
        ),
        (format!("{dir}/abs-victim"), format!("{dir}/abs-errors")),
        ("../../../beside".to_string(), "../../authored".to_string()),
    ];
    for (output, error) in cases {
        let fake = FakeApi::start(responder_with_one_failure());
        fake.push_fault(Fault::FileIds {
            output: output.clone(),
            error: error.clone(),
        });
        let world = World::new(&fake);
        std::fs::create_dir_all(world.out()).expect("out dir");
        for name in ["victim.jsonl", "beside.jsonl", "abs-victim.jsonl"] {
            std::fs::write(world.dir.path().join(name), "precious\n").expect("write");
        }
        let bar = Bar::before(&world);
        let probe_before = files_outside(probe.path(), &world.out());
        bar.ran(world.run(&["author"])).success();
        bar.after();
        bar.nothing_lost(&fake);
        assert_eq!(
            files_outside(probe.path(), &world.out()),
            probe_before,
            "ids {output} / {error}: a file was written at an absolute path"
        );
        assert!(fake.counters().lines_in_batches.values().all(|n| *n == 1));
        assert_eq!(
            count_by_category(&world.read_jsonl("authored.jsonl")).len(),
            10,
            "ids {output} / {error}: the results were still collected"
        );
    }
}

#[test]
fn state_entries_that_are_symlinks_out_of_the_out_dir_are_refused() {
    for entry in ["state/cache.jsonl", "state/journal", "state/downloads"] {
        let fake = FakeApi::start(good_responder());
        let mut world = World::new(&fake).set("release.per_category=2");
        world.run(&["author"]).success();
        let inside = world.out().join(entry);
        let outside = world.dir.path().join("elsewhere");
        std::fs::rename(&inside, &outside).expect("move out");
        std::os::unix::fs::symlink(&outside, &inside).expect("symlink");
        let before = if outside.is_dir() {
            files_outside(&outside, &world.out())
        } else {
            BTreeMap::from([(outside.clone(), std::fs::read(&outside).expect("read"))])
        };
        world.also("release.per_category=4");
        let bar = Bar::before(&world);
        bar.ran(world.run(&["author"]))
            .code(2)
            .stderr_has("symbolic link")
            .stderr_has(entry);
        bar.after();
        let after = if outside.is_dir() {
            files_outside(&outside, &world.out())
        } else {
            BTreeMap::from([(outside.clone(), std::fs::read(&outside).expect("read"))])
        };
        assert_eq!(after, before, "{entry}: written through the symlink");
    }
}
