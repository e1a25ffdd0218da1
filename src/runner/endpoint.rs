//! Where the API key may be sent: `api.base_url` must be https (plain http only to a loopback
//! address) and carry no credentials. Both the config loader and the HTTP client apply this one
//! check, so a bad endpoint is refused before any request, with the key named in no message.
//! The `online` backend with no key set sends nothing secret, so it may also use plain http to
//! a server on another host (a self-hosted vLLM on the local network).

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
    check_url(url, true)
}

/// The `online` backend's check: as [`check_base_url`] when a key is sent; without one, plain
/// http to any host is allowed.
pub fn check_online_url(url: &str, sends_key: bool) -> Result<reqwest::Url, EndpointError> {
    check_url(url, sends_key)
}

fn check_url(url: &str, sends_key: bool) -> Result<reqwest::Url, EndpointError> {
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
            if loopback || !sends_key {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_off_loopback_is_allowed_only_when_no_key_is_sent() {
        let lan = "http://gpu-box.internal:8000/v1";
        assert!(check_base_url(lan).is_err());
        assert!(check_online_url(lan, true).is_err());
        assert!(check_online_url(lan, false).is_ok());
        assert!(check_online_url("http://127.0.0.1:8000/v1", true).is_ok());
        assert!(matches!(
            check_online_url("http://user:pw@gpu-box:8000/v1", false),
            Err(EndpointError::CredentialsInUrl(_))
        ));
    }
}
