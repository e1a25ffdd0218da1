//! In-process llama.cpp engine behind `api.provider = "local"`: answers OpenAI chat-completion
//! request bodies from a GGUF model on this machine, with no network and no key, and gives the
//! same bytes for the same body every time so local releases are reproducible.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::OnceLock;
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
use llama_cpp_2::{json_schema_to_grammar, send_logs_to_tracing, LogOptions};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

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

/// Any JSON object, for `response_format: {"type": "json_object"}`. Strings exclude raw control
/// characters so the reply parses with strict JSON parsers; whitespace is bounded so the model
/// cannot spend its budget on blank lines.
const JSON_OBJECT_GRAMMAR: &str = r#"root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") space
object ::= "{" space ( string ":" space value ( "," space string ":" space value )* )? "}" space
array  ::= "[" space ( value ( "," space value )* )? "]" space
string ::= "\"" char* "\"" space
char   ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,15})? space
space  ::= | " " | "\n"{1,2} [ \t]{0,20}
"#;

/// How the local engine runs the model.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalSettings {
    pub model_path: PathBuf,
    pub threads: u32,
    pub context_size: u32,
    pub repeat_penalty: f32,
    /// A llama.cpp chat template name or a Jinja template; `None`: the model's own.
    pub chat_template: Option<String>,
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

/// A loaded model plus one context sized by [`LocalSettings`], reused (KV cache cleared) for
/// every request: creating a 4096-token context costs ~60 ms against ~2 ms for a clear.
///
/// The model is leaked so the context can borrow it for `'static`: an engine lives as long as
/// the run that loads it, and the weights are a read-only memory map.
pub struct LocalEngine {
    model: &'static LlamaModel,
    context: LlamaContext<'static>,
    template: LlamaChatTemplate,
    settings: LocalSettings,
    model_name: String,
    /// The tokens whose keys and values the context holds, in position order: the last
    /// request's prompt and the tokens it generated. The next prompt evaluates only what
    /// follows the prefix it shares with them.
    evaluated: Vec<LlamaToken>,
    last_timing: Option<RequestTiming>,
}

/// Where the time of one request (or, summed with [`RequestTiming::add`], of a job) went. It is
/// kept beside the response, never in it: a response's bytes must not depend on how fast the
/// machine was.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RequestTiming {
    /// Prompt tokens whose keys and values were kept from the previous request.
    pub reused_prompt_tokens: usize,
    /// Prompt tokens evaluated for this request (the rest of the prompt).
    pub evaluated_prompt_tokens: usize,
    pub prompt_evaluation: Duration,
    pub completion_tokens: usize,
    /// From the first token picked to the last: sampling, grammar and single-token decodes.
    pub generation: Duration,
}

impl RequestTiming {
    pub fn add(&mut self, other: &RequestTiming) {
        self.reused_prompt_tokens += other.reused_prompt_tokens;
        self.evaluated_prompt_tokens += other.evaluated_prompt_tokens;
        self.prompt_evaluation += other.prompt_evaluation;
        self.completion_tokens += other.completion_tokens;
        self.generation += other.generation;
    }

    /// Evaluated prompt tokens per second (0 when no time was spent).
    pub fn prompt_tokens_per_second(&self) -> f64 {
        per_second(self.evaluated_prompt_tokens, self.prompt_evaluation)
    }

    /// Generated tokens per second (0 when no time was spent).
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

impl std::fmt::Debug for LocalEngine {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LocalEngine")
            .field("settings", &self.settings)
            .field("model_name", &self.model_name)
            .finish_non_exhaustive()
    }
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

impl LocalEngine {
    /// Loads the GGUF model named by `settings` and reads its chat template.
    pub fn load(settings: &LocalSettings) -> Result<LocalEngine, LocalError> {
        validate_settings(settings)?;
        let path = &settings.model_path;
        if !path.is_file() {
            return Err(LocalError::ModelMissing { path: path.clone() });
        }
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|error| LocalError::ModelUnloadable {
                path: path.clone(),
                reason: error.to_string(),
            })?;
        let template = chat_template(&model, settings)?;
        let model: &'static LlamaModel = Box::leak(Box::new(model));
        let context = new_context(backend, model, settings)?;
        let model_name = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(LocalEngine {
            model,
            context,
            template,
            settings: settings.clone(),
            model_name,
            evaluated: Vec::new(),
            last_timing: None,
        })
    }

    /// Runs one OpenAI chat-completion request body and returns an OpenAI `chat.completion`
    /// response body. The same body always yields the same bytes.
    pub fn complete(&mut self, body: &Value) -> Result<Value, LocalError> {
        self.last_timing = None;
        let request = ChatRequest::parse(body)?;
        let prompt = self.render_prompt(&request.messages)?;
        let context_size = self.token_limit();
        if prompt.len() >= context_size as usize {
            return Err(LocalError::PromptTooLong {
                prompt_tokens: prompt.len(),
                context_size,
            });
        }
        let mut picker = self.token_picker(&request)?;
        let reused = self.keep_shared_prefix(&prompt);
        let generation = match self.generate(&mut picker, &prompt, reused, request.max_tokens) {
            Ok(generation) => generation,
            Err(error) => {
                self.forget_evaluated();
                return Err(error);
            }
        };
        self.last_timing = Some(generation.timing);
        let model = request.model.unwrap_or_else(|| self.model_name.clone());
        let content = String::from_utf8_lossy(&generation.text).into_owned();
        let prompt_tokens = prompt.len();
        let completion_tokens = generation.completion_tokens;
        Ok(json!({
            "id": format!("chatcmpl-local-{}", request_digest(body)),
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "logprobs": null,
                "finish_reason": generation.finish_reason.as_str(),
            }],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }))
    }

    /// How the last successful [`LocalEngine::complete`] spent its time; `None` before the first
    /// and after a failed one.
    pub fn last_timing(&self) -> Option<RequestTiming> {
        self.last_timing
    }

    /// Drops from the context every position after the longest prefix `prompt` shares with
    /// what it holds (always leaving the last prompt token to evaluate, for its logits), and
    /// returns that prefix's length.
    fn keep_shared_prefix(&mut self, prompt: &[LlamaToken]) -> usize {
        let shared = self
            .evaluated
            .iter()
            .zip(prompt)
            .take_while(|(held, wanted)| held == wanted)
            .count()
            .min(prompt.len().saturating_sub(1));
        let position = u32::try_from(shared).unwrap_or(u32::MAX);
        match self
            .context
            .clear_kv_cache_seq(Some(0), Some(position), None)
        {
            Ok(true) => {
                self.evaluated.truncate(shared);
                shared
            }
            _ => {
                self.forget_evaluated();
                0
            }
        }
    }

    fn forget_evaluated(&mut self) {
        self.context.clear_kv_cache();
        self.evaluated.clear();
    }

    /// Prompt plus completion tokens allowed per request: the configured size, even though
    /// llama.cpp rounds its context up (to a multiple of 256).
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

    /// The repetition penalty, then temperature, nucleus and a seeded draw, in the order OpenAI
    /// documents temperature and `top_p`; the grammar stays separate (see [`TokenPicker`]).
    fn token_picker(&self, request: &ChatRequest) -> Result<TokenPicker, LocalError> {
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

    fn generate(
        &mut self,
        picker: &mut TokenPicker,
        prompt: &[LlamaToken],
        reused: usize,
        max_tokens: u32,
    ) -> Result<Generation, LocalError> {
        let vocab = self.model.vocab();
        let token_limit = self.token_limit() as usize;
        let context = &mut self.context;
        let prompt_started = Instant::now();
        let mut batch = LlamaBatch::new(prompt.len() - reused, 1);
        let last = prompt.len().saturating_sub(1);
        for (position, token) in prompt.iter().enumerate().skip(reused) {
            batch
                .add(*token, to_llama_int(position)?, &[0], position == last)
                .map_err(|error| LocalError::Decode(error.to_string()))?;
        }
        decode(context, &mut batch)?;
        self.evaluated = prompt.to_vec();
        let prompt_evaluation = prompt_started.elapsed();
        let generation_started = Instant::now();

        let mut text = Vec::new();
        let mut completion_tokens = 0_usize;
        let mut position = prompt.len();
        let finish_reason = loop {
            let token = picker.pick(context, batch.n_tokens() - 1)?;
            if vocab.is_eog(token) {
                break FinishReason::Stop;
            }
            vocab.token_to_piece_into(token, &mut text, false, None);
            completion_tokens += 1;
            let total_tokens = position + 1;
            if completion_tokens >= max_tokens as usize || total_tokens >= token_limit {
                break FinishReason::Length;
            }
            batch.clear();
            batch
                .add(token, to_llama_int(position)?, &[0], true)
                .map_err(|error| LocalError::Decode(error.to_string()))?;
            decode(context, &mut batch)?;
            self.evaluated.push(token);
            position += 1;
        };
        Ok(Generation {
            text,
            completion_tokens,
            finish_reason,
            timing: RequestTiming {
                reused_prompt_tokens: reused,
                evaluated_prompt_tokens: prompt.len() - reused,
                prompt_evaluation,
                completion_tokens,
                generation: generation_started.elapsed(),
            },
        })
    }
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

fn new_context(
    backend: &LlamaBackend,
    model: &'static LlamaModel,
    settings: &LocalSettings,
) -> Result<LlamaContext<'static>, LocalError> {
    let threads = to_llama_int(settings.threads)?;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(settings.context_size))
        .with_n_batch(settings.context_size)
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

struct Generation {
    text: Vec<u8>,
    completion_tokens: usize,
    finish_reason: FinishReason,
    timing: RequestTiming,
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

#[derive(Debug, Clone, PartialEq)]
struct ChatMessage {
    role: String,
    content: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Sampling {
    Greedy,
    Random {
        temperature: f32,
        top_p: f32,
        seed: u32,
    },
}

/// The parts of an OpenAI chat-completion body the local engine honours; other fields are
/// ignored, as a batch endpoint ignores options a model does not support.
#[derive(Debug, Clone, PartialEq)]
struct ChatRequest {
    messages: Vec<ChatMessage>,
    sampling: Sampling,
    max_tokens: u32,
    grammar: Option<String>,
    model: Option<String>,
}

impl ChatRequest {
    fn parse(body: &Value) -> Result<ChatRequest, LocalError> {
        let fields = body
            .as_object()
            .ok_or_else(|| invalid("the body must be a JSON object"))?;
        let temperature = optional_number(body, "temperature")?.unwrap_or(1.0);
        if temperature < 0.0 {
            return Err(invalid("temperature must not be negative"));
        }
        let top_p = optional_number(body, "top_p")?.unwrap_or(1.0);
        if !(top_p > 0.0 && top_p <= 1.0) {
            return Err(invalid("top_p must be in (0, 1]"));
        }
        let sampling = if temperature == 0.0 {
            Sampling::Greedy
        } else {
            Sampling::Random {
                temperature,
                top_p,
                seed: parse_seed(body.get("seed"))?,
            }
        };
        let model = match fields.get("model") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.clone()),
            Some(_) => return Err(invalid("model must be a string")),
        };
        Ok(ChatRequest {
            messages: parse_messages(body.get("messages"))?,
            sampling,
            max_tokens: parse_max_tokens(body)?,
            grammar: parse_response_format(body.get("response_format"))?,
            model,
        })
    }
}

fn invalid(reason: &str) -> LocalError {
    LocalError::InvalidBody(reason.to_string())
}

fn parse_messages(messages: Option<&Value>) -> Result<Vec<ChatMessage>, LocalError> {
    let messages = match messages {
        Some(Value::Array(messages)) if !messages.is_empty() => messages,
        _ => return Err(invalid("messages must be a non-empty array")),
    };
    messages
        .iter()
        .enumerate()
        .map(|(index, message)| {
            let role = match message.get("role").and_then(Value::as_str) {
                Some(role @ ("system" | "user" | "assistant")) => role.to_string(),
                _ => {
                    return Err(LocalError::InvalidBody(format!(
                        "messages[{index}].role must be \"system\", \"user\" or \"assistant\""
                    )))
                }
            };
            let content = message
                .get("content")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    LocalError::InvalidBody(format!("messages[{index}].content must be a string"))
                })?;
            Ok(ChatMessage {
                role,
                content: content.to_string(),
            })
        })
        .collect()
}

fn optional_number(body: &Value, key: &str) -> Result<Option<f32>, LocalError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_f64() {
            Some(number) if number.is_finite() => Ok(Some(number as f32)),
            _ => Err(LocalError::InvalidBody(format!("{key} must be a number"))),
        },
    }
}

/// `max_completion_tokens` is OpenAI's newer name for `max_tokens`; it wins when both are set.
fn parse_max_tokens(body: &Value) -> Result<u32, LocalError> {
    let field = ["max_completion_tokens", "max_tokens"]
        .into_iter()
        .find_map(|key| match body.get(key) {
            None | Some(Value::Null) => None,
            Some(value) => Some((key, value)),
        });
    let Some((key, value)) = field else {
        return Ok(DEFAULT_MAX_TOKENS);
    };
    match value.as_u64().map(u32::try_from) {
        Some(Ok(limit)) if limit > 0 => Ok(limit),
        _ => Err(LocalError::InvalidBody(format!(
            "{key} must be a positive integer"
        ))),
    }
}

/// Folds a JSON integer seed (u64, or a negative i64 as OpenAI allows) into llama.cpp's u32;
/// seeds below 2^32 map to themselves, except the one value llama.cpp reads as "random".
fn parse_seed(seed: Option<&Value>) -> Result<u32, LocalError> {
    let bits = match seed {
        None | Some(Value::Null) => 0,
        Some(value) => value
            .as_u64()
            .or_else(|| value.as_i64().map(|signed| signed as u64))
            .ok_or_else(|| invalid("seed must be an integer"))?,
    };
    let folded = ((bits >> 32) ^ bits) as u32;
    Ok(if folded == LLAMA_RANDOM_SEED {
        LLAMA_RANDOM_SEED - 1
    } else {
        folded
    })
}

fn parse_response_format(format: Option<&Value>) -> Result<Option<String>, LocalError> {
    let Some(format) = format.filter(|format| !format.is_null()) else {
        return Ok(None);
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(JSON_OBJECT_GRAMMAR.to_string())),
        Some("json_schema") => {
            let schema = format
                .get("json_schema")
                .and_then(|spec| spec.get("schema"))
                .filter(|schema| schema.is_object())
                .ok_or_else(|| {
                    invalid("response_format.json_schema.schema must be a JSON object")
                })?;
            json_schema_to_grammar(&schema.to_string())
                .map(Some)
                .map_err(|error| {
                    LocalError::InvalidBody(format!(
                        "response_format.json_schema.schema is not supported by llama.cpp: {error}"
                    ))
                })
        }
        _ => Err(invalid(
            "response_format.type must be \"text\", \"json_object\" or \"json_schema\"",
        )),
    }
}

#[cfg(test)]
#[allow(clippy::print_stdout)] // test reports, not user output
mod tests {
    use super::*;
    use std::path::Path;
    use std::sync::{Mutex, MutexGuard, PoisonError};

    const ITEMS_SCHEMA: &str = r#"{
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "prompt": {"type": "string"},
                        "golds": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["prompt", "golds"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["items"],
        "additionalProperties": false
    }"#;

    fn settings(model_path: PathBuf, threads: u32, context_size: u32) -> LocalSettings {
        LocalSettings {
            model_path,
            threads,
            context_size,
            repeat_penalty: DEFAULT_REPEAT_PENALTY,
            chat_template: None,
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
            let before = reusing.evaluated.clone();
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

    #[test]
    fn engine_can_move_to_a_worker_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<LocalEngine>();
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
    fn body_without_messages_is_invalid() {
        for body in [
            json!({}),
            json!({"messages": []}),
            json!({"messages": "hi"}),
        ] {
            assert!(
                matches!(ChatRequest::parse(&body), Err(LocalError::InvalidBody(_))),
                "{body}"
            );
        }
    }

    #[test]
    fn unknown_role_and_non_string_content_are_invalid() {
        let bodies = [
            json!({"messages": [{"role": "tool", "content": "x"}]}),
            json!({"messages": [{"role": "user", "content": null}]}),
        ];
        for body in bodies {
            assert!(
                matches!(ChatRequest::parse(&body), Err(LocalError::InvalidBody(_))),
                "{body}"
            );
        }
    }

    #[test]
    fn sampling_fields_are_read_with_openai_defaults() {
        let messages = json!([{"role": "user", "content": "hi"}]);
        let defaults = ChatRequest::parse(&json!({"messages": messages})).expect("parses");
        assert_eq!(defaults.max_tokens, DEFAULT_MAX_TOKENS);
        assert_eq!(
            defaults.sampling,
            Sampling::Random {
                temperature: 1.0,
                top_p: 1.0,
                seed: 0
            }
        );
        assert_eq!(defaults.grammar, None);
        let greedy =
            ChatRequest::parse(&json!({"messages": messages, "temperature": 0, "max_tokens": 9}))
                .expect("parses");
        assert_eq!(greedy.sampling, Sampling::Greedy);
        assert_eq!(greedy.max_tokens, 9);
        let newer = ChatRequest::parse(
            &json!({"messages": messages, "max_tokens": 9, "max_completion_tokens": 3}),
        )
        .expect("parses");
        assert_eq!(newer.max_tokens, 3);
        for bad in [
            json!({"temperature": -1}),
            json!({"top_p": 0}),
            json!({"max_tokens": 0}),
            json!({"seed": 1.5}),
        ] {
            let mut body = bad.clone();
            body["messages"] = messages.clone();
            assert!(
                matches!(ChatRequest::parse(&body), Err(LocalError::InvalidBody(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn seeds_fold_to_u32_and_avoid_the_random_seed() {
        assert_eq!(parse_seed(None).unwrap(), 0);
        assert_eq!(parse_seed(Some(&json!(42))).unwrap(), 42);
        assert_eq!(
            parse_seed(Some(&json!(u64::from(u32::MAX)))).unwrap(),
            u32::MAX - 1
        );
        assert_eq!(parse_seed(Some(&json!(1_u64 << 32))).unwrap(), 1);
        assert_eq!(parse_seed(Some(&json!(-1))).unwrap(), 0);
    }

    #[test]
    fn response_format_selects_a_grammar() {
        assert_eq!(parse_response_format(None).unwrap(), None);
        assert_eq!(
            parse_response_format(Some(&json!({"type": "text"}))).unwrap(),
            None
        );
        assert_eq!(
            parse_response_format(Some(&json!({"type": "json_object"})))
                .unwrap()
                .as_deref(),
            Some(JSON_OBJECT_GRAMMAR)
        );
        let schema: Value = serde_json::from_str(ITEMS_SCHEMA).unwrap();
        let grammar = parse_response_format(Some(
            &json!({"type": "json_schema", "json_schema": {"schema": schema}}),
        ))
        .unwrap()
        .expect("a grammar");
        assert!(grammar.contains("root ::="), "{grammar}");
        for bad in [json!({"type": "json_schema"}), json!({"type": "xml"})] {
            assert!(
                matches!(
                    parse_response_format(Some(&bad)),
                    Err(LocalError::InvalidBody(_))
                ),
                "{bad}"
            );
        }
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
