//! Where the API key may be sent: `api.base_url` must be https (plain http only to a loopback
//! address) and carry no credentials. Both the config loader and the HTTP client apply this one
//! check, so a bad endpoint is refused before any request, with the key named in no message.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    #[error("api.base_url {0} is not allowed: API keys are only sent over https:// (plain http:// only to a loopback address such as 127.0.0.1)")]
    InsecureUrl(String),
    #[error("api.base_url {0} is not a valid URL")]
    BadUrl(String),
    #[error("api.base_url {0} carries a user name or password (user:pass@…): remove them from the URL. The key is sent only from the environment variable named by api.api_key_env, and credentials in the URL would be sent too")]
    CredentialsInUrl(String),
}

/// Refuses to send a key over plain HTTP unless the host is loopback, and refuses credentials
/// in the URL (they would be sent beside the key, and printed in errors).
pub fn check_base_url(url: &str) -> Result<reqwest::Url, EndpointError> {
    let shown = without_userinfo(url);
    let parsed = reqwest::Url::parse(url).map_err(|_| EndpointError::BadUrl(shown.clone()))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(EndpointError::CredentialsInUrl(shown));
    }
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" => {
            let host = parsed
                .host_str()
                .unwrap_or("")
                .trim_start_matches('[')
                .trim_end_matches(']');
            let loopback = host.eq_ignore_ascii_case("localhost")
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if loopback {
                Ok(parsed)
            } else {
                Err(EndpointError::InsecureUrl(shown))
            }
        }
        _ => Err(EndpointError::BadUrl(shown)),
    }
}

/// `url` with anything between `scheme://` and an `@` of its authority shown as `…`, so that an
/// error never prints a password, whether or not the URL parses.
pub fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://…@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}
