//! In-process llama.cpp engine behind `api.provider = "local"`: answers OpenAI chat-completion
//! request bodies from a GGUF model on this machine, with no network and no key.
//!
//! It decodes up to `local.parallel` requests together in one llama.cpp batch, one sequence id
//! each, as llama.cpp's own server does with its parallel slots: a sequence that finishes hands its
//! slot to the next request at once (continuous batching), and a new sequence takes the longest
//! prompt prefix any sequence holds by sharing its KV cells (a sequence copy) instead of
//! evaluating it again. The schedule is a function of the requests and their order alone, so the
//! same requests, seed, `local.parallel` and binary give the same bytes.

mod loops;
mod request;

use std::num::NonZeroU32;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::{send_logs_to_tracing, LogOptions};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::config::MAX_PARALLEL;
use request::{ChatMessage, ChatRequest, Dry, Sampling};

/// Completion budget when a request body has no `max_tokens`.
pub const DEFAULT_MAX_TOKENS: u32 = 512;
/// Repetition penalty that keeps the bundled SmolLM2-135M from looping.
pub const DEFAULT_REPEAT_PENALTY: f32 = 1.15;
/// How many of the most recent tokens the repetition penalty looks at (llama.cpp's default).
const PENALTY_WINDOW: i32 = 64;
/// llama.cpp's `LLAMA_FLASH_ATTN_TYPE_DISABLED`. Flash attention splits its sums by thread, so
/// with it the output bytes change with the thread count; without it they do not.
const FLASH_ATTENTION_DISABLED: i32 = 0;
/// llama.cpp reads this seed as "pick a random seed", which would break reproducibility.
const LLAMA_RANDOM_SEED: u32 = u32::MAX;

/// How the local engine runs one model.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalSettings {
    pub model_path: PathBuf,
    pub threads: u32,
    /// Prompt plus completion tokens one request may use.
    pub context_size: u32,
    pub repeat_penalty: f32,
    /// A llama.cpp chat template name or a Jinja template; `None`: the model's own.
    pub chat_template: Option<String>,
    /// Requests decoded together, one sequence each (1 to [`MAX_PARALLEL`]).
    pub parallel: u32,
    /// End a reply caught in a loop at once (`finish_reason` `length`), see [`loops`].
    pub cut_loops: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error("local model file {} not found; run scripts/fetch-model.sh to download it", path.display())]
    ModelMissing { path: PathBuf },
    #[error("cannot load {} as a GGUF model ({reason}); run scripts/fetch-model.sh to fetch a verified copy, or enable debug logging (RUST_LOG=debug) to see llama.cpp's own log", path.display())]
    ModelUnloadable { path: PathBuf, reason: String },
    #[error("invalid local engine settings: {0}")]
    InvalidSettings(String),
    #[error("{} has no chat template (its GGUF metadata lacks tokenizer.chat_template), so chat messages cannot be turned into its prompt: set local.chat_template to the llama.cpp template name of the model's format (e.g. \"chatml\", \"llama3\", \"mistral-v7\", \"gemma\", \"phi3\") or to its Jinja template", path.display())]
    NoChatTemplate { path: PathBuf },
    #[error("local.chat_template {0:?} is neither a chat template name llama.cpp knows (e.g. \"chatml\", \"llama3\", \"mistral-v7\", \"gemma\", \"phi3\") nor a Jinja template it recognises: set it to one of those, or to \"\" to use the model's own")]
    UnknownChatTemplate(String),
    #[error("llama.cpp backend: {0}")]
    Backend(String),
    #[error("invalid chat-completion request body: {0}")]
    InvalidBody(String),
    #[error("the prompt is {prompt_tokens} tokens but the local context holds {context_size}; raise the local context size or shorten the prompt")]
    PromptTooLong {
        prompt_tokens: usize,
        context_size: u32,
    },
    #[error("the model's chat template could not render the messages: {0}")]
    ChatTemplate(String),
    #[error("llama.cpp rejected the grammar: {0}")]
    Grammar(String),
    #[error("llama.cpp failed while generating: {0}")]
    Decode(String),
}

impl LocalError {
    /// Problems the user fixes in the config (exit 2): the settings, the model file, its template.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            LocalError::ModelMissing { .. }
                | LocalError::ModelUnloadable { .. }
                | LocalError::InvalidSettings(_)
                | LocalError::NoChatTemplate { .. }
                | LocalError::UnknownChatTemplate(_)
        )
    }
}

/// A loaded model plus one context whose KV cache holds `parallel` sequences, reused for every
/// request: creating a context costs far more than clearing a sequence.
pub struct LocalEngine {
    model: &'static LlamaModel,
    context: LlamaContext<'static>,
    template: LlamaChatTemplate,
    settings: LocalSettings,
    model_name: String,
    /// Per sequence id: the tokens whose keys and values the context holds for it, in position
    /// order (a prompt and the tokens generated after it). They outlive their request, so a later
    /// prompt evaluates only what follows the longest prefix it shares with any of them.
    held: Vec<Vec<LlamaToken>>,
    /// The DRY sampler last built, unused, with what it was built for: requests that ask for the
    /// same DRY clone it, since building one reads the whole vocabulary once per breaker.
    dry: Option<(Dry, LlamaSampler)>,
    /// Room for one request's prompt or one token of every sequence.
    batch: LlamaBatch<'static>,
    last_timing: Option<Timing>,
}

impl std::fmt::Debug for LocalEngine {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LocalEngine")
            .field("settings", &self.settings)
            .field("model_name", &self.model_name)
            .finish_non_exhaustive()
    }
}

/// Where the time of a run of requests went (of one request, for [`LocalEngine::complete`]). It
/// is kept beside the responses, never in them: a response's bytes must not depend on how fast
/// the machine was.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timing {
    /// Requests that got a response.
    pub requests: usize,
    /// Prompt tokens whose keys and values were already in the context (any sequence's).
    pub reused_prompt_tokens: usize,
    /// Prompt tokens evaluated (the rest of the prompts).
    pub evaluated_prompt_tokens: usize,
    pub prompt_evaluation: Duration,
    pub completion_tokens: usize,
    /// Replies ended early because they were caught in a loop.
    pub loops_cut: usize,
    /// Time spent picking tokens and decoding them, all sequences together: the completion tokens
    /// over it are the aggregate generation speed.
    pub generation: Duration,
}

impl Timing {
    pub fn add(&mut self, other: &Timing) {
        self.requests += other.requests;
        self.reused_prompt_tokens += other.reused_prompt_tokens;
        self.evaluated_prompt_tokens += other.evaluated_prompt_tokens;
        self.prompt_evaluation += other.prompt_evaluation;
        self.completion_tokens += other.completion_tokens;
        self.loops_cut += other.loops_cut;
        self.generation += other.generation;
    }

    /// Evaluated prompt tokens per second (0 when no time was spent).
    pub fn prompt_tokens_per_second(&self) -> f64 {
        per_second(self.evaluated_prompt_tokens, self.prompt_evaluation)
    }

    /// Generated tokens per second, all sequences together (0 when no time was spent).
    pub fn generation_tokens_per_second(&self) -> f64 {
        per_second(self.completion_tokens, self.generation)
    }
}

fn per_second(tokens: usize, spent: Duration) -> f64 {
    let seconds = spent.as_secs_f64();
    if seconds > 0.0 {
        tokens as f64 / seconds
    } else {
        0.0
    }
}

/// One request being decoded in its slot.
struct Sequence {
    /// The response's id, derived from the request body.
    id: String,
    model: String,
    picker: TokenPicker,
    max_tokens: usize,
    prompt_tokens: usize,
    text: Vec<u8>,
    completion_tokens: usize,
    /// The token picked last and not yet decoded; its position is the length of the slot's
    /// `held` tokens.
    next: LlamaToken,
    /// Where this sequence's logits are in the batch decoded last.
    logits: i32,
}

/// What starting a request in a slot led to.
enum Start {
    Running(Box<Sequence>),
    /// It ended on its first token (an end-of-generation token, or a budget of one).
    Finished(Value),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FinishReason {
    Stop,
    Length,
}

impl FinishReason {
    fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
        }
    }
}

impl LocalEngine {
    /// Loads the GGUF model named by `settings` (once per process) and reads its chat template.
    pub fn load(settings: &LocalSettings) -> Result<LocalEngine, LocalError> {
        validate_settings(settings)?;
        let path = &settings.model_path;
        if !path.is_file() {
            return Err(LocalError::ModelMissing { path: path.clone() });
        }
        let backend = backend()?;
        let model = loaded_model(backend, path)?;
        let template = chat_template(model, settings)?;
        let context = new_context(backend, model, settings)?;
        let model_name = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let sequences = settings.parallel as usize;
        let batch_tokens = settings.context_size.max(settings.parallel) as usize;
        Ok(LocalEngine {
            model,
            context,
            template,
            settings: settings.clone(),
            model_name,
            held: vec![Vec::new(); sequences],
            dry: None,
            batch: LlamaBatch::new(batch_tokens, 1),
            last_timing: None,
        })
    }

    /// Runs one OpenAI chat-completion request body and returns an OpenAI `chat.completion`
    /// response body. The same body always yields the same bytes.
    pub fn complete(&mut self, body: &Value) -> Result<Value, LocalError> {
        self.last_timing = None;
        let mut outcome = None;
        let timing = self.complete_all([((), body.clone())], |(), result, _| {
            outcome = Some(result);
            ControlFlow::Continue(())
        });
        let result = outcome
            .unwrap_or_else(|| Err(LocalError::Decode("the request got no outcome".to_string())));
        if result.is_ok() {
            self.last_timing = Some(timing);
        }
        result
    }

    /// How the last successful [`LocalEngine::complete`] spent its time; `None` before the first
    /// and after a failed one.
    pub fn last_timing(&self) -> Option<Timing> {
        self.last_timing
    }

    /// Runs `requests` with up to `local.parallel` of them decoded together, in order: each
    /// takes the first free slot, and a finished one frees its slot for the next. `finished` gets
    /// every request's response or error as soon as it has one, with the run's timing so far;
    /// it returns `Break` to stop the run (the requests still running are dropped). Returns the
    /// run's timing.
    pub fn complete_all<K>(
        &mut self,
        requests: impl IntoIterator<Item = (K, Value)>,
        mut finished: impl FnMut(K, Result<Value, LocalError>, &Timing) -> ControlFlow<()>,
    ) -> Timing {
        let mut queue = requests.into_iter();
        let mut slots: Vec<Option<(K, Box<Sequence>)>> =
            (0..self.held.len()).map(|_| None).collect();
        let mut timing = Timing::default();
        let mut stopped = false;
        loop {
            for (slot, entry) in slots.iter_mut().enumerate() {
                while !stopped && entry.is_none() {
                    let Some((key, body)) = queue.next() else {
                        break;
                    };
                    let result = match self.start(slot, &body, &mut timing) {
                        Ok(Start::Running(sequence)) => {
                            *entry = Some((key, sequence));
                            continue;
                        }
                        Ok(Start::Finished(response)) => Ok(response),
                        Err(error) => Err(error),
                    };
                    timing.requests += usize::from(result.is_ok());
                    stopped = finished(key, result, &timing).is_break();
                }
            }
            if stopped || slots.iter().all(Option::is_none) {
                break;
            }
            let ended = self.step(&mut slots, &mut timing);
            for (key, result) in ended {
                timing.requests += usize::from(result.is_ok());
                if !stopped {
                    stopped = finished(key, result, &timing).is_break();
                }
            }
        }
        for (slot, entry) in slots.iter_mut().enumerate() {
            if entry.take().is_some() {
                self.forget(slot);
            }
        }
        timing
    }

    /// Decodes the pending token of every running sequence in one batch and picks each one's
    /// next token. Returns the requests that ended, in slot order; their slots are freed.
    fn step<K>(
        &mut self,
        slots: &mut [Option<(K, Box<Sequence>)>],
        timing: &mut Timing,
    ) -> Vec<(K, Result<Value, LocalError>)> {
        let started = Instant::now();
        self.batch.clear();
        let mut added = Ok(());
        for (slot, running) in slots.iter_mut().enumerate() {
            let Some((_, sequence)) = running else {
                continue;
            };
            let position = self.held[slot].len();
            added = added.and_then(|()| {
                self.batch
                    .add(
                        sequence.next,
                        to_llama_int(position)?,
                        &[to_llama_int(slot)?],
                        true,
                    )
                    .map_err(|error| LocalError::Decode(error.to_string()))
            });
            sequence.logits = self.batch.n_tokens() - 1;
            self.held[slot].push(sequence.next);
        }
        let decoded = added
            .and_then(|()| decode(&mut self.context, &mut self.batch))
            .map_err(|error| error.to_string());
        let mut ended = Vec::new();
        for (slot, entry) in slots.iter_mut().enumerate() {
            let Some((key, mut sequence)) = entry.take() else {
                continue;
            };
            let outcome = match &decoded {
                Ok(()) => match sequence.picker.pick(&self.context, sequence.logits) {
                    Ok(token) => self.accept(slot, &mut sequence, token, timing),
                    Err(error) => Some(Err(error)),
                },
                Err(message) => {
                    self.forget(slot);
                    Some(Err(LocalError::Decode(message.clone())))
                }
            };
            match outcome {
                None => *entry = Some((key, sequence)),
                Some(result) => ended.push((key, result)),
            }
        }
        timing.generation += started.elapsed();
        ended
    }

    /// Starts `body` in sequence `slot`: renders and checks its prompt, evaluates what no
    /// sequence holds of it, and picks its first token.
    fn start(
        &mut self,
        slot: usize,
        body: &Value,
        timing: &mut Timing,
    ) -> Result<Start, LocalError> {
        let request = ChatRequest::parse(body)?;
        let prompt = self.render_prompt(&request.messages)?;
        let context_size = self.token_limit();
        if prompt.len() >= context_size as usize {
            return Err(LocalError::PromptTooLong {
                prompt_tokens: prompt.len(),
                context_size,
            });
        }
        let picker = self.token_picker(&request, &prompt)?;
        let started = Instant::now();
        let reused = self.load_prefix(slot, &prompt);
        self.batch.clear();
        let last = prompt.len() - 1;
        let sequence = to_llama_int(slot)?;
        for (position, token) in prompt.iter().enumerate().skip(reused) {
            self.batch
                .add(
                    *token,
                    to_llama_int(position)?,
                    &[sequence],
                    position == last,
                )
                .map_err(|error| LocalError::Decode(error.to_string()))?;
        }
        if let Err(error) = decode(&mut self.context, &mut self.batch) {
            self.forget(slot);
            return Err(error);
        }
        self.held[slot] = prompt;
        timing.reused_prompt_tokens += reused;
        timing.evaluated_prompt_tokens += self.held[slot].len() - reused;
        timing.prompt_evaluation += started.elapsed();

        let picked = Instant::now();
        let mut sequence = Box::new(Sequence {
            id: format!("chatcmpl-local-{}", request_digest(body)),
            model: request.model.unwrap_or_else(|| self.model_name.clone()),
            picker,
            max_tokens: request.max_tokens as usize,
            prompt_tokens: self.held[slot].len(),
            text: Vec::new(),
            completion_tokens: 0,
            next: LlamaToken(0),
            logits: self.batch.n_tokens() - 1,
        });
        let outcome = match sequence.picker.pick(&self.context, sequence.logits) {
            Ok(token) => self.accept(slot, &mut sequence, token, timing),
            Err(error) => Some(Err(error)),
        };
        timing.generation += picked.elapsed();
        match outcome {
            None => Ok(Start::Running(sequence)),
            Some(result) => result.map(Start::Finished),
        }
    }

    /// Takes `token` as the next of `sequence`: `Some` response when it ends the request (an
    /// end-of-generation token, the request's budget or the context's, or a loop), else `None`
    /// with the token queued for the next batch.
    fn accept(
        &self,
        slot: usize,
        sequence: &mut Sequence,
        token: LlamaToken,
        timing: &mut Timing,
    ) -> Option<Result<Value, LocalError>> {
        let vocab = self.model.vocab();
        if vocab.is_eog(token) {
            return Some(Ok(response(sequence, FinishReason::Stop)));
        }
        vocab.token_to_piece_into(token, &mut sequence.text, false, None);
        sequence.completion_tokens += 1;
        timing.completion_tokens += 1;
        let total_tokens = self.held[slot].len() + 1;
        if sequence.completion_tokens >= sequence.max_tokens
            || total_tokens >= self.token_limit() as usize
        {
            return Some(Ok(response(sequence, FinishReason::Length)));
        }
        if self.settings.cut_loops && loops::in_a_loop(&sequence.text) {
            timing.loops_cut += 1;
            return Some(Ok(response(sequence, FinishReason::Length)));
        }
        sequence.next = token;
        None
    }

    /// Puts in sequence `slot` the longest prefix of `prompt` that any sequence holds (always
    /// leaving the last prompt token to evaluate, for its logits) and returns its length. The
    /// slot's own prefix is kept in place; another sequence's is shared by a sequence copy, which
    /// in llama.cpp's unified KV cache only marks the cells as the slot's too.
    fn load_prefix(&mut self, slot: usize, prompt: &[LlamaToken]) -> usize {
        let shared_with = |held: &[LlamaToken]| {
            held.iter()
                .zip(prompt)
                .take_while(|(held, wanted)| held == wanted)
                .count()
                .min(prompt.len().saturating_sub(1))
        };
        let own = (slot, shared_with(&self.held[slot]));
        let (source, shared) = self
            .held
            .iter()
            .enumerate()
            .map(|(other, held)| (other, shared_with(held)))
            .fold(
                own,
                |best, other| if other.1 > best.1 { other } else { best },
            );
        let (Ok(sequence), Ok(position)) = (u32::try_from(slot), u32::try_from(shared)) else {
            self.forget(slot);
            return 0;
        };
        let kept = if source == slot {
            self.context
                .clear_kv_cache_seq(Some(sequence), Some(position), None)
                .is_ok_and(|removed| removed)
        } else {
            self.context
                .clear_kv_cache_seq(Some(sequence), None, None)
                .is_ok_and(|removed| removed)
                && i32::try_from(source).is_ok_and(|source| {
                    self.context
                        .copy_kv_cache_seq(source, sequence as i32, Some(0), Some(position))
                        .is_ok()
                })
        };
        if !kept {
            self.forget(slot);
            return 0;
        }
        self.held[slot] = prompt[..shared].to_vec();
        shared
    }

    /// Drops everything sequence `slot` holds.
    fn forget(&mut self, slot: usize) {
        if let Ok(sequence) = u32::try_from(slot) {
            // A whole sequence's removal cannot fail.
            let _ = self.context.clear_kv_cache_seq(Some(sequence), None, None);
        }
        self.held[slot].clear();
    }

    /// Prompt plus completion tokens allowed per request: the configured size, even though
    /// llama.cpp rounds its context up (to a multiple of 256) and holds `parallel` of them.
    fn token_limit(&self) -> u32 {
        self.settings.context_size.min(self.context.n_ctx())
    }

    fn render_prompt(&self, messages: &[ChatMessage]) -> Result<Vec<LlamaToken>, LocalError> {
        let chat = messages
            .iter()
            .map(|message| {
                LlamaChatMessage::new(message.role.clone(), message.content.clone())
                    .map_err(|error| LocalError::InvalidBody(format!("message text: {error}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let text = self
            .model
            .apply_chat_template(&self.template, &chat, true)
            .map_err(|error| LocalError::ChatTemplate(error.to_string()))?;
        let tokens = self.model.vocab().tokenize(text.as_bytes(), true, true);
        if tokens.is_empty() {
            return Err(LocalError::InvalidBody(
                "the messages render to an empty prompt".to_string(),
            ));
        }
        Ok(tokens)
    }

    /// The repetition penalty and DRY (as llama.cpp orders them), then temperature, nucleus and a
    /// seeded draw, in the order OpenAI documents temperature and `top_p`; the grammar stays
    /// separate (see [`TokenPicker`]). DRY has seen `prompt`, as in llama.cpp's server, so a reply
    /// cannot copy long runs of its prompt either; the repetition penalty sees the reply only.
    fn token_picker(
        &mut self,
        request: &ChatRequest,
        prompt: &[LlamaToken],
    ) -> Result<TokenPicker, LocalError> {
        let grammar = match &request.grammar {
            Some(grammar) => Some(
                LlamaSampler::grammar(self.model, grammar, "root")
                    .map_err(|error| LocalError::Grammar(error.to_string()))?,
            ),
            None => None,
        };
        let mut stages = vec![LlamaSampler::penalties(
            self.model.n_vocab(),
            PENALTY_WINDOW,
            self.settings.repeat_penalty,
            0.0,
            0.0,
        )];
        if let Some(dry) = &request.dry {
            let mut sampler = self.dry_sampler(dry);
            for &token in prompt {
                sampler.accept(token);
            }
            stages.push(sampler);
        }
        match request.sampling {
            Sampling::Greedy => stages.push(LlamaSampler::greedy()),
            Sampling::Random {
                temperature,
                top_p,
                seed,
            } => {
                stages.push(LlamaSampler::temp(temperature));
                stages.push(LlamaSampler::top_p(top_p, 1));
                stages.push(LlamaSampler::dist(seed));
            }
        }
        Ok(TokenPicker {
            grammar,
            chain: LlamaSampler::chain_simple(stages),
        })
    }

    /// A DRY sampler for `dry` that has seen no token.
    fn dry_sampler(&mut self, dry: &Dry) -> LlamaSampler {
        match &self.dry {
            Some((built_for, sampler)) if built_for == dry => sampler.clone(),
            _ => {
                let whole_context = i32::try_from(self.token_limit()).unwrap_or(i32::MAX);
                let sampler = LlamaSampler::dry(
                    self.model,
                    dry.multiplier,
                    dry.base,
                    dry.allowed_length,
                    // llama.cpp sizes a buffer by it: no window past the context
                    dry.penalty_last_n
                        .map_or(whole_context, |n| n.min(whole_context)),
                    &dry.breakers,
                );
                self.dry = Some((dry.clone(), sampler.clone()));
                sampler
            }
        }
    }
}

/// The `chat.completion` body of a finished sequence.
fn response(sequence: &Sequence, finish_reason: FinishReason) -> Value {
    let content = String::from_utf8_lossy(&sequence.text).into_owned();
    let prompt_tokens = sequence.prompt_tokens;
    let completion_tokens = sequence.completion_tokens;
    json!({
        "id": sequence.id,
        "object": "chat.completion",
        "created": 0,
        "model": sequence.model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "logprobs": null,
            "finish_reason": finish_reason.as_str(),
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    })
}

/// Chooses each next token. With a grammar it first samples without it and checks only the
/// chosen token, re-sampling under the full grammar mask when that token is not allowed (as
/// llama.cpp's own `common_sampler` does). Masking all 49k candidates at every step cost ~40% of
/// the throughput in our measurements, and most steps need no mask. Greedy picks are identical
/// either way.
struct TokenPicker {
    grammar: Option<LlamaSampler>,
    chain: LlamaSampler,
}

impl TokenPicker {
    fn pick(&mut self, context: &LlamaContext<'_>, index: i32) -> Result<LlamaToken, LocalError> {
        let mut candidates = context.token_data_array_ith(index);
        candidates.apply_sampler(&mut self.chain);
        let mut token = selected(&candidates)?;
        if let Some(grammar) = &mut self.grammar {
            if !grammar_allows(grammar, token) {
                let mut constrained = context.token_data_array_ith(index);
                constrained.apply_sampler(grammar);
                constrained.apply_sampler(&mut self.chain);
                token = selected(&constrained)?;
            }
            grammar
                .try_accept(token)
                .map_err(|error| LocalError::Grammar(error.to_string()))?;
        }
        self.chain.accept(token);
        Ok(token)
    }
}

fn grammar_allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut single = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
    single.apply_sampler(grammar);
    single
        .data
        .first()
        .is_some_and(|candidate| candidate.logit().is_finite())
}

fn selected(candidates: &LlamaTokenDataArray) -> Result<LlamaToken, LocalError> {
    candidates
        .selected_token()
        .ok_or_else(|| LocalError::Decode("the sampler selected no token".to_string()))
}

/// llama.cpp's backend may be initialised once per process; every engine shares this one.
/// Its logging is routed to `tracing` only when debug output is enabled, and silenced otherwise.
fn backend() -> Result<&'static LlamaBackend, LocalError> {
    static BACKEND: OnceLock<Option<LlamaBackend>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let verbose = tracing::enabled!(tracing::Level::DEBUG);
            send_logs_to_tracing(LogOptions::default().with_logs_enabled(verbose));
            LlamaBackend::init().ok()
        })
        .as_ref()
        .ok_or_else(|| {
            LocalError::Backend("it was initialised elsewhere in this process".to_string())
        })
}

/// The template that turns chat messages into the model's prompt: `local.chat_template` when
/// set (checked by rendering a message with it), else the one in the model's metadata.
fn chat_template(
    model: &LlamaModel,
    settings: &LocalSettings,
) -> Result<LlamaChatTemplate, LocalError> {
    let Some(name) = settings.chat_template.as_deref() else {
        return model
            .chat_template(None)
            .map_err(|_| LocalError::NoChatTemplate {
                path: settings.model_path.clone(),
            });
    };
    let unknown = || LocalError::UnknownChatTemplate(name.chars().take(80).collect());
    let template = LlamaChatTemplate::new(name).map_err(|_| unknown())?;
    let probe = LlamaChatMessage::new("user".into(), "hello".into()).map_err(|_| unknown())?;
    model
        .apply_chat_template(&template, &[probe], true)
        .map_err(|_| unknown())?;
    Ok(template)
}

/// Each model file is loaded once per process and kept for its rest: an engine borrows its model
/// for `'static`, and a run that loads the author, the verifier and the panel in turn, round after
/// round, then loads each only once. The weights are a read-only memory map.
fn loaded_model(backend: &LlamaBackend, path: &Path) -> Result<&'static LlamaModel, LocalError> {
    static MODELS: Mutex<Vec<(PathBuf, &'static LlamaModel)>> = Mutex::new(Vec::new());
    let mut models = MODELS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, model)) = models.iter().find(|(loaded, _)| loaded == path) {
        return Ok(model);
    }
    let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default()).map_err(
        |error| LocalError::ModelUnloadable {
            path: path.to_path_buf(),
            reason: error.to_string(),
        },
    )?;
    let model: &'static LlamaModel = Box::leak(Box::new(model));
    models.push((path.to_path_buf(), model));
    Ok(model)
}

/// A context whose unified KV cache holds `parallel` requests of `context_size` tokens each.
/// Unified, because a sequence copy then shares a prompt prefix's cells instead of copying them
/// (llama.cpp copies between separate per-sequence caches only whole).
fn new_context(
    backend: &LlamaBackend,
    model: &'static LlamaModel,
    settings: &LocalSettings,
) -> Result<LlamaContext<'static>, LocalError> {
    let threads = to_llama_int(settings.threads)?;
    let cells = settings
        .context_size
        .checked_mul(settings.parallel)
        .filter(|cells| to_llama_int(*cells).is_ok())
        .ok_or_else(|| {
            LocalError::InvalidSettings(
                "context_size × parallel is too large for llama.cpp".to_string(),
            )
        })?;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(cells))
        .with_n_batch(settings.context_size.max(settings.parallel))
        .with_n_seq_max(settings.parallel)
        .with_kv_unified(true)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        .with_flash_attention_policy(FLASH_ATTENTION_DISABLED);
    model
        .new_context(backend, params)
        .map_err(|error| LocalError::Backend(format!("cannot create a context: {error}")))
}

fn validate_settings(settings: &LocalSettings) -> Result<(), LocalError> {
    if settings.threads == 0 {
        return Err(LocalError::InvalidSettings(
            "threads must be at least 1".to_string(),
        ));
    }
    to_llama_int(settings.threads)?;
    if settings.context_size < 2 {
        return Err(LocalError::InvalidSettings(
            "context_size must be at least 2 tokens".to_string(),
        ));
    }
    to_llama_int(settings.context_size)?;
    if !(1..=MAX_PARALLEL).contains(&settings.parallel) {
        return Err(LocalError::InvalidSettings(format!(
            "parallel must be from 1 to {MAX_PARALLEL} sequences, got {}",
            settings.parallel
        )));
    }
    if !(settings.repeat_penalty.is_finite() && settings.repeat_penalty > 0.0) {
        return Err(LocalError::InvalidSettings(format!(
            "repeat_penalty must be a positive number (1.0 disables it), got {}",
            settings.repeat_penalty
        )));
    }
    Ok(())
}

fn to_llama_int<N>(value: N) -> Result<i32, LocalError>
where
    N: Copy + std::fmt::Display + TryInto<i32>,
{
    value
        .try_into()
        .map_err(|_| LocalError::InvalidSettings(format!("{value} is too large for llama.cpp")))
}

fn decode(context: &mut LlamaContext<'_>, batch: &mut LlamaBatch<'_>) -> Result<(), LocalError> {
    context
        .decode(batch)
        .map_err(|error| LocalError::Decode(error.to_string()))
}

/// Names a response after its request, so a re-run produces the same id.
fn request_digest(body: &Value) -> String {
    let digest = Sha256::digest(body.to_string().as_bytes());
    digest
        .iter()
        .take(12)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
#[allow(clippy::print_stdout)] // test reports, not user output
mod tests {
    use super::request::ITEMS_SCHEMA;
    use super::*;
    use crate::quality::validate::{self, ExampleLayout, Patterns, Rules};
    use crate::stages::item::Category;
    use std::path::Path;
    use std::sync::{Mutex, MutexGuard, PoisonError};

    fn settings(model_path: PathBuf, threads: u32, context_size: u32) -> LocalSettings {
        LocalSettings {
            model_path,
            threads,
            context_size,
            repeat_penalty: DEFAULT_REPEAT_PENALTY,
            chat_template: None,
            parallel: 1,
            cut_loops: true,
        }
    }

    /// Model tests take turns: llama.cpp's worker threads spin while they wait, so two engines
    /// computing at once on a small machine slow each other down many times over.
    static MODEL_TURN: Mutex<()> = Mutex::new(());

    /// The model named by `SASEVAL_TEST_MODEL` and this test's turn on the CPU, or `None` (with
    /// a notice) when the variable is unset.
    fn test_model(test: &str) -> Option<(PathBuf, MutexGuard<'static, ()>)> {
        let Some(path) = std::env::var_os("SASEVAL_TEST_MODEL") else {
            println!("skipping {test}: set SASEVAL_TEST_MODEL to a GGUF model to run it");
            return None;
        };
        let turn = MODEL_TURN.lock().unwrap_or_else(PoisonError::into_inner);
        Some((path.into(), turn))
    }

    fn load_engine(model: &Path, threads: u32, context_size: u32) -> LocalEngine {
        LocalEngine::load(&settings(model.to_path_buf(), threads, context_size))
            .expect("test model loads")
    }

    fn items_request(max_tokens: u32) -> Value {
        let schema: Value = serde_json::from_str(ITEMS_SCHEMA).expect("schema is JSON");
        json!({
            "model": "smollm2",
            "messages": [
                {"role": "system", "content": "You write quiz questions as JSON."},
                {"role": "user", "content": "Write two short trivia questions about rivers, each with its answer in golds."}
            ],
            "temperature": 0.7,
            "top_p": 0.95,
            "seed": 42,
            "max_tokens": max_tokens,
            "response_format": {"type": "json_schema", "json_schema": {"name": "items", "schema": schema}}
        })
    }

    fn content(response: &Value) -> &str {
        response["choices"][0]["message"]["content"]
            .as_str()
            .expect("content is a string")
    }

    fn finish_reason(response: &Value) -> &str {
        response["choices"][0]["finish_reason"]
            .as_str()
            .expect("finish_reason is a string")
    }

    fn assert_matches_items_schema(reply: &Value) {
        let object = reply.as_object().expect("reply is an object");
        assert_eq!(object.keys().collect::<Vec<_>>(), ["items"]);
        let items = reply["items"].as_array().expect("items is an array");
        assert!(!items.is_empty(), "no items in {reply}");
        for item in items {
            let item = item.as_object().expect("item is an object");
            let mut keys = item.keys().cloned().collect::<Vec<_>>();
            keys.sort();
            assert_eq!(keys, ["golds", "prompt"]);
            assert!(item["prompt"].is_string());
            let golds = item["golds"].as_array().expect("golds is an array");
            assert!(golds.iter().all(Value::is_string));
        }
    }

    #[test]
    fn json_schema_request_returns_content_matching_the_schema() {
        let test = "json_schema_request_returns_content_matching_the_schema";
        let Some((model, _turn)) = test_model(test) else {
            return;
        };
        let mut engine = load_engine(&model, 1, 2048);
        let response = engine.complete(&items_request(400)).expect("completion");
        assert_eq!(finish_reason(&response), "stop", "reply: {response}");
        let reply: Value = serde_json::from_str(content(&response)).expect("content parses");
        assert_matches_items_schema(&reply);
        assert_eq!(response["object"], "chat.completion");
        assert_eq!(response["created"], 0);
        assert_eq!(response["model"], "smollm2");
        let usage = &response["usage"];
        assert_eq!(
            usage["total_tokens"].as_u64(),
            Some(
                usage["prompt_tokens"].as_u64().unwrap()
                    + usage["completion_tokens"].as_u64().unwrap()
            )
        );
    }

    #[test]
    fn json_object_request_returns_a_json_object() {
        let Some((model, _turn)) = test_model("json_object_request_returns_a_json_object") else {
            return;
        };
        let mut engine = load_engine(&model, 1, 2048);
        let body = json!({
            "messages": [{"role": "user", "content": "Describe a cat as a JSON object with name and age."}],
            "temperature": 0,
            "max_tokens": 200,
            "response_format": {"type": "json_object"}
        });
        let response = engine.complete(&body).expect("completion");
        assert_eq!(finish_reason(&response), "stop", "reply: {response}");
        let reply: Value = serde_json::from_str(content(&response)).expect("content parses");
        assert!(reply.is_object(), "reply: {reply}");
    }

    #[test]
    fn same_body_twice_gives_identical_bytes() {
        let Some((model, _turn)) = test_model("same_body_twice_gives_identical_bytes") else {
            return;
        };
        let mut engine = load_engine(&model, 1, 2048);
        let body = items_request(120);
        let first = engine.complete(&body).expect("first completion");
        let other = json!({"messages": [{"role": "user", "content": "Say something else."}], "max_tokens": 20, "seed": 7});
        engine.complete(&other).expect("completion in between");
        let second = engine.complete(&body).expect("second completion");
        assert_eq!(first.to_string(), second.to_string());
        let mut fresh = load_engine(&model, 1, 2048);
        assert_eq!(
            fresh.complete(&body).expect("fresh completion").to_string(),
            first.to_string()
        );
    }

    #[test]
    fn reusing_a_shared_prompt_prefix_gives_the_bytes_of_a_fresh_context() {
        let Some((model, _turn)) =
            test_model("reusing_a_shared_prompt_prefix_gives_the_bytes_of_a_fresh_context")
        else {
            return;
        };
        let system =
            "You write enterprise quiz items as JSON. Each item has a prompt and short golds. "
                .repeat(8);
        let ask = |topic: &str, seed: u64| {
            json!({
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": format!("Write one question about {topic}.")}
                ],
                "temperature": 0.7, "top_p": 0.95, "seed": seed, "max_tokens": 40
            })
        };
        let bodies = [
            ask("rivers", 1),
            ask("rivers and lakes", 2),
            ask("mountains", 3),
        ];
        let mut reusing = load_engine(&model, 2, 2048);
        let mut shared = Vec::new();
        for body in &bodies {
            let before = reusing.held[0].clone();
            let reply = reusing.complete(body).expect("completion").to_string();
            let prompt = reusing.render_prompt(&ChatRequest::parse(body).expect("body").messages);
            let prompt = prompt.expect("prompt");
            shared.push(
                before
                    .iter()
                    .zip(&prompt)
                    .take_while(|(a, b)| a == b)
                    .count(),
            );
            let mut fresh = load_engine(&model, 2, 2048);
            let alone = fresh.complete(body).expect("fresh completion").to_string();
            assert_eq!(reply, alone, "{body}");
        }
        assert_eq!(shared[0], 0);
        assert!(
            shared[1] > 100 && shared[2] > 100,
            "the system prompt is reused: {shared:?}"
        );
    }

    #[test]
    fn timing_counts_the_reused_and_evaluated_prompt_and_is_cleared_by_a_failure() {
        let Some((model, _turn)) =
            test_model("timing_counts_the_reused_and_evaluated_prompt_and_is_cleared_by_a_failure")
        else {
            return;
        };
        let mut engine = load_engine(&model, 2, 512);
        let system = "You answer questions about enterprise software in one short line. ".repeat(4);
        let ask = |question: &str| {
            json!({
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": question}
                ],
                "temperature": 0, "max_tokens": 8
            })
        };
        assert_eq!(engine.last_timing(), None);
        let mut timings = Vec::new();
        for question in ["Which port does HTTPS use?", "Which port does SSH use?"] {
            let reply = engine.complete(&ask(question)).expect("completion");
            let timing = engine.last_timing().expect("a timing after a completion");
            let usage = |field: &str| reply["usage"][field].as_u64().expect("usage") as usize;
            assert_eq!(
                timing.reused_prompt_tokens + timing.evaluated_prompt_tokens,
                usage("prompt_tokens")
            );
            assert_eq!(timing.completion_tokens, usage("completion_tokens"));
            assert!(timing.prompt_evaluation > Duration::ZERO);
            assert!(timing.generation > Duration::ZERO);
            timings.push(timing);
        }
        assert_eq!(timings[0].reused_prompt_tokens, 0);
        assert!(
            timings[1].reused_prompt_tokens > 40,
            "the system message is reused: {timings:?}"
        );
        let too_long = json!({"messages": [{"role": "user", "content": "river ".repeat(600)}]});
        assert!(engine.complete(&too_long).is_err());
        assert_eq!(engine.last_timing(), None);
    }

    #[test]
    fn dry_stops_a_greedy_reply_from_repeating_a_sentence() {
        let test = "dry_stops_a_greedy_reply_from_repeating_a_sentence";
        let Some((model, _turn)) = test_model(test) else {
            return;
        };
        let sentence = "The backup job runs every night at midnight.";
        let mut engine = LocalEngine::load(&LocalSettings {
            repeat_penalty: 1.0,
            ..settings(model, 2, 512)
        })
        .expect("test model loads");
        let mut reply = |dry: Value| {
            let mut body = json!({
                "messages": [{"role": "user", "content": format!("Continue this log, one line at a time:\n{sentence}\n{sentence}\n{sentence}")}],
                "temperature": 0,
                "max_tokens": 96
            });
            body.as_object_mut()
                .expect("an object")
                .extend(dry.as_object().expect("an object").clone());
            content(&engine.complete(&body).expect("completion")).to_string()
        };
        let plain = reply(json!({}));
        assert!(
            plain.matches(sentence).count() >= 3,
            "without DRY the model repeats the sentence: {plain}"
        );
        let dry = reply(json!({"dry_multiplier": 2.0, "dry_allowed_length": 3}));
        assert_eq!(
            dry.matches(sentence).count(),
            0,
            "DRY has seen the sentence in the prompt and lets no copy of it through: {dry}"
        );
    }

    #[test]
    fn a_reply_caught_in_a_loop_ends_before_its_budget() {
        let test = "a_reply_caught_in_a_loop_ends_before_its_budget";
        let Some((model, _turn)) = test_model(test) else {
            return;
        };
        let line = "The backup job runs every night at midnight.";
        let body = json!({
            "messages": [{"role": "user", "content": format!("Continue this log:\n{}", format!("{line}\n").repeat(10))}],
            "temperature": 0,
            "max_tokens": 400
        });
        let reply = |cut_loops: bool| {
            let mut engine = LocalEngine::load(&LocalSettings {
                repeat_penalty: 1.0,
                cut_loops,
                ..settings(model.clone(), 2, 1024)
            })
            .expect("test model loads");
            let response = engine.complete(&body).expect("completion");
            let loops_cut = engine.last_timing().expect("timing").loops_cut;
            (response, loops_cut)
        };
        let (whole, _) = reply(false);
        assert_eq!(finish_reason(&whole), "length", "reply: {whole}");
        assert_eq!(whole["usage"]["completion_tokens"], 400);
        let (cut, loops_cut) = reply(true);
        assert_eq!(finish_reason(&cut), "length", "reply: {cut}");
        assert_eq!(loops_cut, 1);
        let tokens = cut["usage"]["completion_tokens"].as_u64().expect("a count");
        assert!(tokens < 200, "ended after {tokens} of 400 tokens: {cut}");
        assert!(
            content(&whole).starts_with(content(&cut)),
            "the cut reply is the start of the whole one"
        );
    }

    #[test]
    fn small_max_tokens_finishes_with_length() {
        let Some((model, _turn)) = test_model("small_max_tokens_finishes_with_length") else {
            return;
        };
        let mut engine = load_engine(&model, 1, 2048);
        let response = engine.complete(&items_request(5)).expect("completion");
        assert_eq!(finish_reason(&response), "length");
        assert_eq!(response["usage"]["completion_tokens"], 5);
    }

    #[test]
    fn free_text_request_returns_text() {
        let Some((model, _turn)) = test_model("free_text_request_returns_text") else {
            return;
        };
        let mut engine = load_engine(&model, 1, 2048);
        let body = json!({
            "messages": [
                {"role": "system", "content": "You are a concise assistant."},
                {"role": "user", "content": "What is the capital of France?"}
            ],
            "temperature": 0,
            "max_tokens": 64
        });
        let response = engine.complete(&body).expect("completion");
        assert!(!content(&response).trim().is_empty(), "reply: {response}");
        assert_eq!(response["choices"][0]["message"]["role"], "assistant");
        assert!(response["id"]
            .as_str()
            .unwrap()
            .starts_with("chatcmpl-local-"));
    }

    #[test]
    fn prompt_longer_than_the_context_is_a_typed_error() {
        let Some((model, _turn)) = test_model("prompt_longer_than_the_context_is_a_typed_error")
        else {
            return;
        };
        let mut engine = load_engine(&model, 1, 64);
        let body = json!({"messages": [{"role": "user", "content": "river ".repeat(200)}]});
        match engine.complete(&body) {
            Err(LocalError::PromptTooLong {
                prompt_tokens,
                context_size,
            }) => {
                assert!(prompt_tokens >= 200);
                assert_eq!(context_size, 64);
            }
            other => panic!("expected PromptTooLong, got {other:?}"),
        }
    }

    #[test]
    fn output_does_not_depend_on_the_thread_count() {
        let test = "output_does_not_depend_on_the_thread_count";
        let Some((model, _turn)) = test_model(test) else {
            return;
        };
        let mut single = load_engine(&model, 1, 2048);
        let mut double = load_engine(&model, 2, 2048);
        let body = json!({
            "messages": [{
                "role": "user",
                "content": "Write a long, detailed essay about the history of the river Thames, with many paragraphs."
            }],
            "temperature": 0.7,
            "top_p": 0.95,
            "seed": 3,
            "max_tokens": 300
        });
        let one = single.complete(&body).expect("one thread");
        let two = double.complete(&body).expect("two threads");
        assert_eq!(content(&one), content(&two));
    }

    #[test]
    fn generation_stops_with_length_when_the_context_is_full() {
        let test = "generation_stops_with_length_when_the_context_is_full";
        let Some((model, _turn)) = test_model(test) else {
            return;
        };
        let mut engine = load_engine(&model, 1, 64);
        let body = json!({
            "messages": [{"role": "user", "content": "Write a long essay about the river Thames."}],
            "temperature": 0,
            "max_tokens": 500
        });
        let response = engine.complete(&body).expect("completion");
        assert_eq!(finish_reason(&response), "length");
        assert_eq!(response["usage"]["total_tokens"], 64);
    }

    /// Requests sharing a long system message, as a job's author requests do, with different
    /// budgets and seeds (so sequences end at different steps and hand their slots on), one in
    /// JSON schema mode, and one body that is invalid.
    fn mixed_requests() -> Vec<(usize, Value)> {
        let system =
            "You write enterprise quiz items. Each item has a prompt and short golds. ".repeat(6);
        let ask = |topic: &str, seed: u64, max_tokens: u32| {
            json!({
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": format!("Write one question about {topic}.")}
                ],
                "temperature": 0.7, "top_p": 0.95, "seed": seed, "max_tokens": max_tokens
            })
        };
        let mut bodies = vec![
            ask("rivers", 1, 24),
            ask("load balancers", 2, 6),
            items_request(40),
            json!({"messages": []}),
            ask("invoices", 3, 1),
            ask("audit logs", 4, 30),
            ask("rivers and lakes", 5, 12),
        ];
        bodies.push(json!({"messages": [{"role": "user", "content": "Say hi."}], "temperature": 0, "max_tokens": 10}));
        bodies.into_iter().enumerate().collect()
    }

    /// Every request's outcome by its key (a response's text or the error's message), and how
    /// many outcomes each key got.
    fn run_all(
        engine: &mut LocalEngine,
        requests: Vec<(usize, Value)>,
    ) -> (Vec<String>, Vec<usize>, Timing) {
        let count = requests.len();
        let mut outcomes = vec![String::new(); count];
        let mut calls = vec![0; count];
        let timing = engine.complete_all(requests, |key, result, _| {
            calls[key] += 1;
            outcomes[key] = match result {
                Ok(response) => response.to_string(),
                Err(error) => format!("error: {error}"),
            };
            ControlFlow::Continue(())
        });
        (outcomes, calls, timing)
    }

    #[test]
    fn parallel_decoding_gives_every_request_one_outcome_and_the_same_bytes_every_run() {
        let test = "parallel_decoding_gives_every_request_one_outcome_and_the_same_bytes_every_run";
        let Some((model, _turn)) = test_model(test) else {
            return;
        };
        let parallel = |sequences: u32| {
            LocalEngine::load(&LocalSettings {
                parallel: sequences,
                ..settings(model.clone(), 2, 1024)
            })
            .expect("test model loads")
        };
        let mut engine = parallel(3);
        let (first, calls, timing) = run_all(&mut engine, mixed_requests());
        assert!(calls.iter().all(|&n| n == 1), "one outcome each: {calls:?}");
        assert!(
            first[3].starts_with("error: invalid chat-completion request body"),
            "{}",
            first[3]
        );
        let parsed: Vec<Value> = first
            .iter()
            .filter_map(|outcome| serde_json::from_str(outcome).ok())
            .collect();
        assert_eq!(parsed.len(), first.len() - 1, "{first:?}");
        assert_eq!(
            parsed[3]["usage"]["completion_tokens"], 1,
            "a budget of one token"
        );
        assert_eq!(timing.requests, parsed.len());
        assert!(
            timing.reused_prompt_tokens > 100,
            "new sequences take the shared system message from another sequence: {timing:?}"
        );
        let (again, _, _) = run_all(&mut parallel(3), mixed_requests());
        assert_eq!(
            first, again,
            "a fresh engine with the same setting gives the same bytes"
        );
        let (rerun, _, _) = run_all(&mut engine, mixed_requests());
        assert_eq!(
            first, rerun,
            "so does the same engine, whatever its KV cache still holds"
        );
    }

    #[test]
    fn engine_can_move_to_a_worker_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<LocalEngine>();
    }

    /// Whether the grammar of `category`'s authoring schema admits a reply of one item whose
    /// prompt is `prompt`: every token of the reply, then the end of generation.
    fn authoring_grammar_admits(
        model: &'static LlamaModel,
        category: Category,
        prompt: &str,
    ) -> bool {
        let stale = ["48 hours"];
        let annotations = category.is_memory().then_some(&stale[..]);
        authoring_grammar_admits_item(model, category, prompt, annotations)
    }

    /// Whether the local authoring grammar of `category` admits a reply of one item: `prompt`,
    /// the gold `72 hours` and, given `stale`, `durable` `["72 hours"]` beside those stale values.
    fn authoring_grammar_admits_item(
        model: &'static LlamaModel,
        category: Category,
        prompt: &str,
        stale: Option<&[&str]>,
    ) -> bool {
        let example = match category {
            Category::Conversational => "Customer: Hi?\nAgent: Yes.\nCustomer: Which?",
            _ => "Memory:\n- key: value\n\nQuestion: Which?",
        };
        let layout = ExampleLayout::of_example(category, example);
        let schema = validate::reply_schema(
            category,
            &Rules::default(),
            Patterns::RawJson,
            layout.as_ref(),
        );
        let grammar = llama_cpp_2::json_schema_to_grammar(&schema.to_string()).expect("grammar");
        let mut sampler = LlamaSampler::grammar(model, &grammar, "root").expect("grammar sampler");
        let annotations = match stale {
            Some(stale) => format!(r#","durable":["72 hours"],"stale":{}"#, Value::from(stale)),
            None => String::new(),
        };
        let reply = format!(
            r#"{{"items":[{{"prompt":{},"golds":["72 hours"]{annotations}}}]}}"#,
            Value::from(prompt)
        );
        let vocab = model.vocab();
        for token in vocab.tokenize(reply.as_bytes(), false, false) {
            if !grammar_allows(&mut sampler, token) {
                return false;
            }
            sampler.accept(token);
        }
        grammar_allows(&mut sampler, vocab.eos())
    }

    #[test]
    fn the_authoring_grammar_holds_dialogs_and_memory_blocks_to_their_layout() {
        let test = "the_authoring_grammar_holds_dialogs_and_memory_blocks_to_their_layout";
        let Some((path, _turn)) = test_model(test) else {
            return;
        };
        let model = loaded_model(backend().expect("backend"), &path).expect("model");
        let admits = |category, prompt: &str| authoring_grammar_admits(model, category, prompt);
        let dialog = "Customer: Our org has two sandboxes. When do they refresh?\nAgent: qa-east on Sundays at 02:00 UTC, uat-west monthly at 06:00 UTC.\nCustomer: And what time does the monthly one start?";
        assert!(admits(Category::Conversational, dialog));
        let one_voice = "Customer: Our org has two sandboxes. When do they refresh?\nCustomer: qa-east refreshes on Sundays and uat-west monthly.\nCustomer: And what time does the monthly one start?";
        assert!(!admits(Category::Conversational, one_voice));
        let five_turns = format!("{}\nAgent: At 06:00 UTC.\nCustomer: Sure?\nAgent: Yes.\nCustomer: Really?\nAgent: Yes.\nCustomer: Which one?", dialog);
        assert!(!admits(Category::Conversational, &five_turns));
        let answered = format!("{dialog}\nAgent: At 06:00 UTC.");
        assert!(!admits(Category::Conversational, &answered));

        let facts = |n: usize| {
            (0..n)
                .map(|i| format!("\n- setting_{i}: {i} hours"))
                .collect::<String>()
        };
        let recall = |n| {
            format!(
                "Memory:{}\n\nQuestion: How long is the grace period?",
                facts(n)
            )
        };
        assert!(admits(Category::MemoryRecall, &recall(6)));
        assert!(!admits(Category::MemoryRecall, &recall(11)));
        assert!(!admits(Category::MemoryRecall, &recall(2)));

        let update = |n| {
            format!("Memory:{}\n\nUpdate from IAM (2 June): the grace period is now 72 hours.\n\nQuestion: How long is the grace period now?", facts(n))
        };
        assert!(admits(Category::MemoryUpdate, &update(4)));
        assert!(!admits(Category::MemoryUpdate, &update(11)));
        let note = "The policy gave new users 48 hours to enrol.\nA recent update gives them 72 hours.\n\nQuestion: How long do new users have to enrol now?";
        assert!(admits(Category::MemoryUpdate, note));
        let list_without_block = format!(
            "Notes:{}\n\nQuestion: How long is the grace period now?",
            facts(12)
        );
        assert!(!admits(Category::MemoryUpdate, &list_without_block));
    }

    #[test]
    fn the_authoring_grammar_ends_a_stale_list_where_a_memory_block_would() {
        let test = "the_authoring_grammar_ends_a_stale_list_where_a_memory_block_would";
        let Some((path, _turn)) = test_model(test) else {
            return;
        };
        let model = loaded_model(backend().expect("backend"), &path).expect("model");
        let update = "Memory:\n- grace_period: 48 hours\n- region: eu-west-1\n- owner: IAM\n\nUpdate from IAM (2 June): the grace period is now 72 hours.\n\nQuestion: How long is the grace period now?";
        let stale_values: Vec<String> = (0..11).map(|i| format!("{i} hours")).collect();
        let stale_values: Vec<&str> = stale_values.iter().map(String::as_str).collect();
        let with_stale = |n| {
            authoring_grammar_admits_item(
                model,
                Category::MemoryUpdate,
                update,
                Some(&stale_values[..n]),
            )
        };
        assert!(with_stale(10));
        assert!(!with_stale(11), "a stale list runs no longer than a block");
    }

    #[test]
    fn missing_model_error_names_the_path_and_the_fetch_script() {
        let path = PathBuf::from("/nonexistent/saseval/model.gguf");
        let error = LocalEngine::load(&settings(path, 2, 512)).expect_err("no such file");
        assert!(matches!(error, LocalError::ModelMissing { .. }));
        let message = error.to_string();
        assert!(
            message.contains("/nonexistent/saseval/model.gguf"),
            "{message}"
        );
        assert!(message.contains("scripts/fetch-model.sh"), "{message}");
    }

    /// A copy of the test model whose GGUF metadata no longer holds `tokenizer.chat_template`
    /// (the key is renamed in place, so the file stays a valid GGUF), as a user's own
    /// conversion without a template would be.
    fn model_without_chat_template(model: &Path, dir: &Path) -> PathBuf {
        let mut bytes = std::fs::read(model).expect("test model");
        let key = b"tokenizer.chat_template";
        let at = bytes
            .windows(key.len())
            .position(|w| w == key)
            .expect("the test model has a chat template");
        bytes[at + key.len() - 1] = b'_';
        let path = dir.join("no-template.gguf");
        std::fs::write(&path, bytes).expect("write the patched model");
        path
    }

    #[test]
    fn a_model_without_chat_template_is_named_as_such_and_points_to_the_config_key() {
        let test = "a_model_without_chat_template_is_named_as_such_and_points_to_the_config_key";
        let Some((model, _turn)) = test_model(test) else {
            return;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let patched = model_without_chat_template(&model, dir.path());
        let error = LocalEngine::load(&settings(patched.clone(), 1, 512)).expect_err("no template");
        let message = error.to_string();
        assert!(
            message.contains("no chat template") && message.contains("local.chat_template"),
            "{message}"
        );
        assert!(!message.contains("fetch-model.sh"), "{message}");
        assert!(error.is_usage());
        let named = |name: &str| LocalSettings {
            chat_template: Some(name.to_string()),
            ..settings(patched.clone(), 1, 512)
        };
        let unknown = LocalEngine::load(&named("no-such-template")).expect_err("unknown name");
        assert!(
            matches!(unknown, LocalError::UnknownChatTemplate(_))
                && unknown.to_string().contains("local.chat_template"),
            "{unknown}"
        );
        let mut engine =
            LocalEngine::load(&named("chatml")).expect("chatml renders SmolLM2's format");
        let body = json!({"messages": [{"role": "user", "content": "Say hi."}], "temperature": 0, "max_tokens": 8});
        let response = engine.complete(&body).expect("completion");
        assert!(!content(&response).is_empty(), "{response}");
    }

    #[test]
    fn file_that_is_not_gguf_is_unloadable() {
        let path =
            std::env::temp_dir().join(format!("saseval-not-a-model-{}.gguf", std::process::id()));
        std::fs::write(&path, b"this is not a GGUF file").expect("write temp file");
        let result = LocalEngine::load(&settings(path.clone(), 2, 512));
        std::fs::remove_file(&path).expect("remove temp file");
        assert!(
            matches!(result, Err(LocalError::ModelUnloadable { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn request_digest_depends_only_on_the_body() {
        let body = json!({"messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(request_digest(&body), request_digest(&body.clone()));
        assert_ne!(
            request_digest(&body),
            request_digest(&json!({"messages": []}))
        );
        assert_eq!(request_digest(&body).len(), 24);
    }
}
