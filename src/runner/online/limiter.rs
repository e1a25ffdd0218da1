//! How many requests the `online` backend may have in flight, and when it may send the next.
//! Four things decide, each from what the server showed rather than a guess:
//! - a concurrency window, halved on a 429 or 503 and grown back by about one request per
//!   window of replies (AIMD), growing faster at first (slow start) and not at all while the
//!   time per generated token rises steeply (an overloaded vLLM slows down before it refuses);
//! - a request pace learned at the first 429 or 503 (a little under the rate the server was
//!   answering), grown a few percent a second and cut again at the next refusal: a fast server
//!   is limited by rate, which no concurrency window controls;
//! - the configured ceilings `online.rpm` and `online.tpm`, as token buckets;
//! - the pauses the server asks for: `retry-after`, and `x-ratelimit-remaining-*` at zero until
//!   its `x-ratelimit-reset-*`.
//!
//! It holds no clock: every call is given `now`, so it is tested without sleeping.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::config::Online;

/// The window a job starts with (slow start doubles it each round trip from there).
const INITIAL_WINDOW: f64 = 4.0;
/// The fraction of the rate the server was answering at (or of the pace, if lower) that the
/// pace is set to at a refusal.
const PACE_CUT: f64 = 0.9;
/// The pace is cut at most this often: refusals of requests sent just before a cut are the
/// same excess, and cutting for each would compound.
const PACE_CUT_INTERVAL: Duration = Duration::from_millis(250);
/// At a refusal, the pace counts as the server's rate only up to this multiple of the rate it
/// was answering at: a pace far above it was not what the server refused.
const PACE_OVER_ANSWERING: f64 = 1.1;
/// How fast the pace grows while the server answers: this fraction of itself per second.
const PACE_GROWTH_PER_SECOND: f64 = 0.03;
/// The pace never grows past this multiple of the rate the server is answering at: a pace
/// nothing reaches says nothing, and would take many refusals to come down.
const PACE_HEADROOM: f64 = 2.0;
/// The slowest pace, in requests per second.
const MIN_PACE: f64 = 0.05;
/// Replies counted for the answering rate: those of the last this long.
const RATE_WINDOW: Duration = Duration::from_secs(2);
/// Time per token rising past this multiple of its lowest level stops growth...
const LATENCY_RISE: f64 = 2.0;
/// ...and falling back under this multiple lets it resume.
const LATENCY_SETTLED: f64 = 1.5;
/// Weight of the newest reply in the smoothed time per token.
const LATENCY_WEIGHT: f64 = 0.2;
/// Replies seen before the lowest smoothed time per token counts as the baseline.
const LATENCY_SAMPLES: u32 = 4;
/// The longest pause a server's headers can impose at once (a longer `retry-after` is the
/// caller's to report: see [`ServerLimits::retry_after`]).
pub const MAX_PAUSE: Duration = Duration::from_secs(120);
/// Without a reset time, a server that says it has no requests left is asked again after this.
const DEFAULT_RESET: Duration = Duration::from_secs(1);

/// What a finished attempt tells the limiter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Signal {
    /// The server gave a final answer (a completion, or a refusal of this request alone).
    Answered {
        latency: Duration,
        completion_tokens: u64,
        /// The tokens the server counted (`usage.total_tokens`), to settle the tpm estimate.
        total_tokens: Option<u64>,
    },
    /// 429 or 503: the server is over its limit.
    Overloaded,
    /// Another transient failure (a reset, another 5xx, a cut reply): no news about the rate.
    Failed,
}

/// What a reply's headers said about the server's limits; what it did not send is `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerLimits {
    pub retry_after: Option<Duration>,
    pub remaining_requests: Option<u64>,
    pub reset_requests: Option<Duration>,
    pub remaining_tokens: Option<u64>,
    pub reset_tokens: Option<Duration>,
}

impl ServerLimits {
    /// Reads `retry-after` (seconds) and OpenAI's and Groq's `x-ratelimit-*` headers.
    pub fn from_headers(headers: &reqwest::header::HeaderMap) -> ServerLimits {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let count = |name: &str| text(name).and_then(|v| v.trim().parse::<u64>().ok());
        let reset = |name: &str| text(name).and_then(parse_reset);
        ServerLimits {
            retry_after: text("retry-after").and_then(parse_seconds),
            remaining_requests: count("x-ratelimit-remaining-requests"),
            reset_requests: reset("x-ratelimit-reset-requests"),
            remaining_tokens: count("x-ratelimit-remaining-tokens"),
            reset_tokens: reset("x-ratelimit-reset-tokens"),
        }
    }
}

/// `retry-after` in seconds (an HTTP date is not read: no provider of this API sends one).
fn parse_seconds(text: &str) -> Option<Duration> {
    let seconds = text.trim().parse::<f64>().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(1e9)))
}

/// An `x-ratelimit-reset-*` value: a Go-style duration (`1s`, `6m0s`, `20ms`, `2m59.56s`,
/// `1h2m`) or a plain number of seconds.
pub fn parse_reset(text: &str) -> Option<Duration> {
    let text = text.trim();
    if let Some(plain) = parse_seconds(text) {
        return Some(plain);
    }
    let mut rest = text;
    let mut seconds = 0.0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        let value: f64 = number.parse().ok()?;
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        let scale = match unit {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        seconds += value * scale;
        rest = after;
    }
    (seconds.is_finite() && !text.is_empty()).then(|| Duration::from_secs_f64(seconds.min(1e9)))
}

/// Whether a request may go now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Now,
    /// Not before this instant (a pace, a bucket or a pause).
    At(Instant),
    /// The window is full: only a reply frees a place.
    Full,
}

/// A request sent, as the limiter will need it back with its reply.
#[derive(Debug, Clone, Copy)]
pub struct Ticket {
    seq: u64,
    tokens: f64,
}

/// A token bucket: `capacity` at most, refilled at `per_second`.
#[derive(Debug, Clone)]
struct Bucket {
    capacity: f64,
    per_second: f64,
    level: f64,
    at: Instant,
}

impl Bucket {
    fn new(capacity: f64, per_second: f64, now: Instant) -> Bucket {
        Bucket {
            capacity,
            per_second,
            level: capacity,
            at: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.level = (self.level + elapsed * self.per_second).min(self.capacity);
        self.at = self.at.max(now);
    }

    /// When `amount` can be taken: a request larger than the whole bucket goes when it is full.
    fn ready_at(&mut self, amount: f64, now: Instant) -> Option<Instant> {
        self.refill(now);
        let needed = amount.min(self.capacity);
        if self.level >= needed {
            return None;
        }
        let wait = (needed - self.level) / self.per_second;
        Some(now + Duration::from_secs_f64(wait.min(MAX_PAUSE.as_secs_f64())))
    }

    fn take(&mut self, amount: f64, now: Instant) {
        self.refill(now);
        self.level -= amount;
    }

    fn give_back(&mut self, amount: f64, now: Instant) {
        self.refill(now);
        self.level = (self.level + amount).min(self.capacity);
    }
}

/// The smoothed time per generated token against its lowest level.
#[derive(Debug, Clone, Default)]
struct LatencyTrend {
    smoothed: Option<f64>,
    lowest: Option<f64>,
    samples: u32,
    rising: bool,
}

impl LatencyTrend {
    fn observe(&mut self, latency: Duration, completion_tokens: u64) {
        let per_token = latency.as_secs_f64() / completion_tokens.max(1) as f64;
        let smoothed = match self.smoothed {
            Some(s) => s + LATENCY_WEIGHT * (per_token - s),
            None => per_token,
        };
        self.smoothed = Some(smoothed);
        self.samples = self.samples.saturating_add(1);
        if self.samples >= LATENCY_SAMPLES {
            let lowest = self.lowest.map_or(smoothed, |l| l.min(smoothed));
            self.lowest = Some(lowest);
            if smoothed > LATENCY_RISE * lowest {
                self.rising = true;
            } else if smoothed < LATENCY_SETTLED * lowest {
                self.rising = false;
            }
        }
    }
}

/// The request pace learned from the server's refusals.
#[derive(Debug, Clone)]
struct Pace {
    /// Requests per second; `None` until the first refusal.
    per_second: Option<f64>,
    /// The earliest the next request may go at that pace.
    next_at: Instant,
    last_growth: Instant,
}

/// The limiter of one job.
#[derive(Debug, Clone)]
pub struct Limiter {
    ceiling: usize,
    window: f64,
    slow_start: bool,
    in_flight: usize,
    next_seq: u64,
    /// Requests numbered below this were in flight at the last cut: their refusals belong to
    /// the same event and do not cut again.
    cut_before: u64,
    pace: Pace,
    rpm: Option<Bucket>,
    tpm: Option<Bucket>,
    paused_until: Option<Instant>,
    last_pace_cut: Option<Instant>,
    latency: LatencyTrend,
    /// When the replies of the last [`RATE_WINDOW`] came.
    answered: VecDeque<Instant>,
    first_answer: Option<Instant>,
    cuts: u64,
}

impl Limiter {
    pub fn new(online: &Online, now: Instant) -> Limiter {
        let rpm = online
            .rpm
            .map(|rpm| Bucket::new((rpm / 60.0).max(1.0), rpm / 60.0, now));
        let tpm = online.tpm.map(|tpm| Bucket::new(tpm, tpm / 60.0, now));
        Limiter {
            ceiling: online.concurrency.max(1),
            window: INITIAL_WINDOW.min(online.concurrency.max(1) as f64),
            slow_start: true,
            in_flight: 0,
            next_seq: 0,
            cut_before: 0,
            pace: Pace {
                per_second: None,
                next_at: now,
                last_growth: now,
            },
            rpm,
            tpm,
            paused_until: None,
            last_pace_cut: None,
            latency: LatencyTrend::default(),
            answered: VecDeque::new(),
            first_answer: None,
            cuts: 0,
        }
    }

    /// Requests the window allows in flight now.
    pub fn window(&self) -> usize {
        (self.window.floor() as usize).clamp(1, self.ceiling)
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// The learned pace in requests per second, once the server has refused something.
    pub fn pace(&self) -> Option<f64> {
        self.pace.per_second
    }

    /// How many times a refusal cut the window and the pace.
    pub fn cuts(&self) -> u64 {
        self.cuts
    }

    /// Whether a request of about `tokens` tokens may be sent at `now`.
    pub fn admit(&mut self, tokens: f64, now: Instant) -> Admit {
        if self.in_flight >= self.window() {
            return Admit::Full;
        }
        let mut ready = self.paused_until.filter(|until| *until > now);
        if self.pace.per_second.is_some() && self.pace.next_at > now {
            ready = ready.max(Some(self.pace.next_at));
        }
        if let Some(rpm) = &mut self.rpm {
            ready = ready.max(rpm.ready_at(1.0, now));
        }
        if let Some(tpm) = &mut self.tpm {
            ready = ready.max(tpm.ready_at(tokens, now));
        }
        match ready {
            Some(at) => Admit::At(at),
            None => Admit::Now,
        }
    }

    /// Records a request sent at `now` (after [`Limiter::admit`] said `Now`).
    pub fn sent(&mut self, tokens: f64, now: Instant) -> Ticket {
        self.in_flight += 1;
        if let Some(per_second) = self.pace.per_second {
            self.pace.next_at =
                self.pace.next_at.max(now) + Duration::from_secs_f64(1.0 / per_second);
        }
        if let Some(rpm) = &mut self.rpm {
            rpm.take(1.0, now);
        }
        if let Some(tpm) = &mut self.tpm {
            tpm.take(tokens, now);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        Ticket { seq, tokens }
    }

    /// Records the reply to `ticket`: its signal and what its headers said.
    pub fn replied(&mut self, ticket: Ticket, signal: Signal, limits: &ServerLimits, now: Instant) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.obey(limits, ticket.tokens, now);
        match signal {
            Signal::Answered {
                latency,
                completion_tokens,
                total_tokens,
            } => {
                if let (Some(tpm), Some(total)) = (&mut self.tpm, total_tokens) {
                    tpm.give_back((ticket.tokens - total as f64).max(0.0), now);
                }
                self.latency.observe(latency, completion_tokens);
                self.count_answer(now);
                self.grow(now);
            }
            Signal::Overloaded => {
                if ticket.seq >= self.cut_before {
                    self.cut_window();
                }
                let cut_lately = self
                    .last_pace_cut
                    .is_some_and(|at| now.saturating_duration_since(at) < PACE_CUT_INTERVAL);
                if !cut_lately {
                    self.cut_pace(now);
                }
            }
            Signal::Failed => {}
        }
    }

    /// A request given up on before its reply (it is sent again later): its place is free.
    pub fn abandoned(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// Pauses as the server asks: `retry-after`, or no requests or tokens left until a reset.
    fn obey(&mut self, limits: &ServerLimits, tokens: f64, now: Instant) {
        let mut pause = limits.retry_after;
        if limits.remaining_requests == Some(0) {
            pause = pause.max(Some(limits.reset_requests.unwrap_or(DEFAULT_RESET)));
        }
        if limits
            .remaining_tokens
            .is_some_and(|left| (left as f64) < tokens)
        {
            pause = pause.max(Some(limits.reset_tokens.unwrap_or(DEFAULT_RESET)));
        }
        if let Some(pause) = pause {
            let until = now + pause.min(MAX_PAUSE);
            self.paused_until = self.paused_until.max(Some(until));
        }
    }

    fn count_answer(&mut self, now: Instant) {
        self.first_answer.get_or_insert(now);
        self.answered.push_back(now);
        while self
            .answered
            .front()
            .is_some_and(|at| now.saturating_duration_since(*at) > RATE_WINDOW)
        {
            self.answered.pop_front();
        }
    }

    /// Replies per second over the last [`RATE_WINDOW`] (or since the first, if later).
    fn answering_rate(&self, now: Instant) -> f64 {
        let Some(first) = self.first_answer else {
            return 0.0;
        };
        let span = now
            .saturating_duration_since(first)
            .min(RATE_WINDOW)
            .as_secs_f64()
            .max(0.1);
        self.answered.len() as f64 / span
    }

    fn grow(&mut self, now: Instant) {
        if self.latency.rising {
            self.slow_start = false;
            self.pace.last_growth = now;
            return;
        }
        self.window = if self.slow_start {
            self.window + 1.0
        } else {
            self.window + 1.0 / self.window
        }
        .min(self.ceiling as f64);
        if let Some(per_second) = self.pace.per_second {
            let elapsed = now
                .saturating_duration_since(self.pace.last_growth)
                .as_secs_f64()
                .min(1.0);
            let grown = per_second * (1.0 + PACE_GROWTH_PER_SECOND * elapsed);
            let cap = (self.answering_rate(now) * PACE_HEADROOM).max(per_second);
            self.pace.per_second = Some(grown.min(cap));
        }
        self.pace.last_growth = now;
    }

    /// A refusal: halve the window (once for all the requests in flight when it came).
    fn cut_window(&mut self) {
        self.cuts += 1;
        self.slow_start = false;
        self.window = (self.window / 2.0).max(1.0);
        self.cut_before = self.next_seq;
    }

    /// A refusal: set the pace a little under the rate the server was answering at, or under
    /// the pace itself where that is what the server refused (before any answer there is no
    /// rate to learn, and only the window is cut).
    fn cut_pace(&mut self, now: Instant) {
        let answering = self.answering_rate(now);
        let base = match self.pace.per_second {
            Some(per_second) if answering > 0.0 => per_second.min(answering * PACE_OVER_ANSWERING),
            Some(per_second) => per_second,
            None if answering > 0.0 => answering,
            None => return,
        };
        let per_second = (base * PACE_CUT).max(MIN_PACE);
        self.pace.per_second = Some(per_second);
        self.pace.next_at = now + Duration::from_secs_f64(1.0 / per_second);
        self.pace.last_growth = now;
        self.last_pace_cut = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn online(concurrency: usize, rpm: Option<f64>, tpm: Option<f64>) -> Online {
        Online {
            concurrency,
            rpm,
            tpm,
        }
    }

    fn answered(ms: u64) -> Signal {
        Signal::Answered {
            latency: Duration::from_millis(ms),
            completion_tokens: 10,
            total_tokens: None,
        }
    }

    /// Sends and answers requests one round trip of `rtt` at a time, as many as the limiter
    /// allows within it; returns the time after `rounds` round trips.
    fn run_rounds(limiter: &mut Limiter, start: Instant, rounds: u32, rtt: Duration) -> Instant {
        let mut now = start;
        for _ in 0..rounds {
            let round_end = now + rtt;
            let mut tickets = Vec::new();
            loop {
                match limiter.admit(1.0, now) {
                    Admit::Now => tickets.push(limiter.sent(1.0, now)),
                    Admit::At(at) if at < round_end => now = at,
                    _ => break,
                }
            }
            now = round_end;
            for ticket in tickets {
                limiter.replied(
                    ticket,
                    answered(rtt.as_millis() as u64),
                    &ServerLimits::default(),
                    now,
                );
            }
        }
        now
    }

    #[test]
    fn the_window_starts_small_doubles_to_the_ceiling_and_never_passes_it() {
        let start = Instant::now();
        let mut limiter = Limiter::new(&online(64, None, None), start);
        assert_eq!(limiter.window(), 4);
        run_rounds(&mut limiter, start, 1, Duration::from_millis(10));
        assert_eq!(limiter.window(), 8, "slow start doubles each round trip");
        run_rounds(&mut limiter, start, 10, Duration::from_millis(10));
        assert_eq!(limiter.window(), 64);
        assert_eq!(Limiter::new(&online(2, None, None), start).window(), 2);
    }

    #[test]
    fn a_refusal_halves_the_window_once_per_event_and_it_grows_back_by_about_one_per_round() {
        let start = Instant::now();
        let mut limiter = Limiter::new(&online(32, None, None), start);
        let mut now = run_rounds(&mut limiter, start, 6, Duration::from_millis(10));
        assert_eq!(limiter.window(), 32);
        let tickets: Vec<Ticket> = (0..32).map(|_| limiter.sent(1.0, now)).collect();
        now += Duration::from_millis(10);
        for ticket in tickets {
            limiter.replied(ticket, Signal::Overloaded, &ServerLimits::default(), now);
        }
        assert_eq!(
            limiter.window(),
            16,
            "32 refusals of one event halve it once"
        );
        assert_eq!(limiter.cuts(), 1);
        let before = limiter.window();
        run_rounds(
            &mut limiter,
            now + Duration::from_secs(1),
            4,
            Duration::from_millis(10),
        );
        let grown = limiter.window() - before;
        assert!(
            (1..=5).contains(&grown),
            "additive growth, not doubling: +{grown}"
        );
    }

    #[test]
    fn steeply_rising_latency_without_errors_stops_growth() {
        let start = Instant::now();
        let mut limiter = Limiter::new(&online(64, None, None), start);
        let now = run_rounds(&mut limiter, start, 2, Duration::from_millis(10));
        let held = limiter.window();
        run_rounds(&mut limiter, now, 6, Duration::from_millis(100));
        assert_eq!(
            limiter.window(),
            held,
            "ten times slower per token: no growth"
        );
    }

    #[test]
    fn retry_after_and_exhausted_rate_limit_headers_pause_sending_until_then() {
        let now = Instant::now();
        let mut limiter = Limiter::new(&online(8, None, None), now);
        let ticket = limiter.sent(1.0, now);
        let limits = ServerLimits {
            retry_after: Some(Duration::from_secs(2)),
            ..ServerLimits::default()
        };
        limiter.replied(ticket, Signal::Overloaded, &limits, now);
        assert_eq!(
            limiter.admit(1.0, now),
            Admit::At(now + Duration::from_secs(2))
        );

        let mut limiter = Limiter::new(&online(8, None, None), now);
        let ticket = limiter.sent(100.0, now);
        let limits = ServerLimits {
            remaining_requests: Some(0),
            reset_requests: Some(Duration::from_millis(1500)),
            ..ServerLimits::default()
        };
        limiter.replied(ticket, answered(5), &limits, now);
        assert_eq!(
            limiter.admit(1.0, now),
            Admit::At(now + Duration::from_millis(1500))
        );
        let later = now + Duration::from_millis(1500);
        assert_eq!(limiter.admit(1.0, later), Admit::Now);

        let mut limiter = Limiter::new(&online(8, None, None), now);
        let ticket = limiter.sent(500.0, now);
        let limits = ServerLimits {
            remaining_tokens: Some(100),
            reset_tokens: Some(Duration::from_secs(6)),
            ..ServerLimits::default()
        };
        limiter.replied(ticket, answered(5), &limits, now);
        assert_eq!(
            limiter.admit(1.0, now),
            Admit::At(now + Duration::from_secs(6))
        );
    }

    #[test]
    fn an_rpm_ceiling_admits_at_most_its_rate() {
        let start = Instant::now();
        let mut limiter = Limiter::new(&online(64, Some(600.0), None), start);
        let mut sent = 0;
        let mut now = start;
        while now < start + Duration::from_secs(10) {
            match limiter.admit(1.0, now) {
                Admit::Now => {
                    let ticket = limiter.sent(1.0, now);
                    limiter.replied(ticket, answered(1), &ServerLimits::default(), now);
                    sent += 1;
                }
                Admit::At(at) => now = at,
                Admit::Full => now += Duration::from_millis(1),
            }
        }
        assert!((100..=111).contains(&sent), "600 rpm over 10 s: {sent}");
    }

    #[test]
    fn a_tpm_ceiling_counts_estimates_and_gives_back_what_was_not_used() {
        let now = Instant::now();
        let mut limiter = Limiter::new(&online(64, None, Some(6000.0)), now);
        let first = limiter.sent(4000.0, now);
        assert_ne!(limiter.admit(4000.0, now), Admit::Now);
        limiter.replied(
            first,
            Signal::Answered {
                latency: Duration::from_millis(5),
                completion_tokens: 10,
                total_tokens: Some(1000),
            },
            &ServerLimits::default(),
            now,
        );
        assert_eq!(
            limiter.admit(4000.0, now),
            Admit::Now,
            "3000 unused tokens came back"
        );
        assert_eq!(
            limiter.admit(1e9, now + Duration::from_secs(60)),
            Admit::Now,
            "a request larger than the bucket goes when it is full"
        );
    }

    #[test]
    fn a_refusal_sets_a_pace_under_the_answering_rate_that_then_grows_slowly() {
        let start = Instant::now();
        let mut limiter = Limiter::new(&online(64, None, None), start);
        let mut now = start;
        // 100 replies a second for two seconds.
        for _ in 0..200 {
            let ticket = limiter.sent(1.0, now);
            now += Duration::from_millis(10);
            limiter.replied(ticket, answered(1), &ServerLimits::default(), now);
        }
        let ticket = limiter.sent(1.0, now);
        limiter.replied(ticket, Signal::Overloaded, &ServerLimits::default(), now);
        let pace = limiter.pace().expect("a pace after a refusal");
        assert!((85.0..=95.0).contains(&pace), "{pace}");
        let Admit::At(next) = limiter.admit(1.0, now) else {
            panic!("paced")
        };
        assert!(next > now);
        for _ in 0..100 {
            now += Duration::from_millis(12);
            let ticket = limiter.sent(1.0, now);
            limiter.replied(ticket, answered(1), &ServerLimits::default(), now);
        }
        let grown = limiter.pace().expect("pace");
        assert!(grown > pace && grown < pace * 1.1, "{pace} → {grown}");
    }

    #[test]
    fn reset_durations_read_as_go_durations_or_seconds() {
        let cases = [
            ("1s", 1.0),
            ("6m0s", 360.0),
            ("20ms", 0.02),
            ("2m59.56s", 179.56),
            ("1h2m3s", 3723.0),
            ("7.66s", 7.66),
            ("0.5", 0.5),
            ("12", 12.0),
        ];
        for (text, seconds) in cases {
            let parsed = parse_reset(text).unwrap_or_else(|| panic!("{text}"));
            assert!((parsed.as_secs_f64() - seconds).abs() < 1e-9, "{text}");
        }
        for junk in ["", "s", "1x", "-1s", "abc", "1.2.3s"] {
            assert_eq!(parse_reset(junk), None, "{junk}");
        }
    }
}
