//! A chat model behind any OpenAI-compatible endpoint (`POST {base}/chat/completions`:
//! OpenAI, Ollama, vLLM, llama.cpp's server), for Scout's optional LLM rater and
//! synthesis ([`crate::scout::Chat`]).

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use super::EmbedError;
use super::http::{HttpClient, RetryPolicy};

/// A chat-completions client for one model.
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    http: HttpClient,
    url: String,
    model: String,
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<String>,
}

impl OpenAiChat {
    /// A client for `model` at `base_url` (`http://localhost:11434/v1`), with an optional
    /// API key; each request may take `timeout` (two retries on 429, 5xx and transport
    /// failures).
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: Option<String>,
        timeout: Duration,
    ) -> Result<Self, EmbedError> {
        let policy = RetryPolicy {
            max_retries: 2,
            timeout,
            ..RetryPolicy::default()
        };
        Ok(Self {
            http: HttpClient::new("scout model", api_key, policy)?,
            url: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            model: model.to_string(),
        })
    }
}

#[async_trait]
impl crate::scout::Chat for OpenAiChat {
    async fn complete(&self, prompt: &str) -> Result<String, String> {
        let body = json!({
            "model": self.model,
            "temperature": 0,
            "messages": [{ "role": "user", "content": prompt }],
        });
        let answer: Completion = self
            .http
            .post_json(&self.url, &body)
            .await
            .map_err(|e| e.to_string())?;
        answer
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .ok_or_else(|| "the model's answer has no message".to_string())
    }
}
