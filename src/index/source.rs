//! Git source locations (pure): what a registration's `git` string means, the credentials
//! it carries, and which network addresses a fetch may reach.
//!
//! Git accepts URLs (`https://`, `http://`, `ssh://`, `git://`, `file://`), the scp-like
//! form `[user@]host:path`, and plain local paths. A string is scp-like only when a `:`
//! comes before any `/` (git's own rule), so `/srv/a@b/repo` is a local path, not a host
//! named `b`. Credentials in a URL (`https://bot:token@host/…`) are taken out: the
//! repository shows the URL without them, and they are stored apart.

use std::net::IpAddr;
use std::path::PathBuf;

use crate::store::Credentials;

/// How a git source is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitTransport {
    /// `https://`.
    Https,
    /// `http://` (unencrypted).
    Http,
    /// `ssh://` or scp-like `user@host:path`.
    Ssh,
    /// `git://` (unauthenticated, unencrypted).
    Git,
    /// `file://` or a local path: a repository on the server's own disk.
    Local(PathBuf),
}

/// A parsed git source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitLocation {
    /// Transport.
    pub transport: GitTransport,
    /// The location as stored and shown: without a password or token (the user name of an
    /// ssh location stays: it is the account, `git`, not a secret).
    pub url: String,
    /// Host name or address of a remote location (brackets removed from IPv6).
    pub host: Option<String>,
    /// Port, when the location names one or the transport has a standard one.
    pub port: Option<u16>,
    /// Credentials the location carried.
    pub credentials: Option<Credentials>,
}

impl GitLocation {
    /// Parses what a user gave as a git source.
    pub fn parse(input: &str) -> Result<Self, String> {
        let input = input.trim();
        if input.is_empty() {
            return Err("the git source is empty".into());
        }
        if input.contains("://") {
            return Self::parse_url(input);
        }
        match scp_like(input) {
            Some((user, host, path)) => Ok(Self {
                transport: GitTransport::Ssh,
                url: match user {
                    Some(u) => format!("{u}@{host}:{path}"),
                    None => format!("{host}:{path}"),
                },
                host: Some(
                    host.trim_start_matches('[')
                        .trim_end_matches(']')
                        .to_string(),
                ),
                port: Some(22),
                credentials: None,
            }),
            None => Ok(Self {
                transport: GitTransport::Local(PathBuf::from(input)),
                url: input.to_string(),
                host: None,
                port: None,
                credentials: None,
            }),
        }
    }

    fn parse_url(input: &str) -> Result<Self, String> {
        let mut url =
            url::Url::parse(input).map_err(|e| format!("`{input}` is not a valid URL: {e}"))?;
        let transport = match url.scheme() {
            "https" => GitTransport::Https,
            "http" => GitTransport::Http,
            "ssh" | "git+ssh" | "ssh+git" => GitTransport::Ssh,
            "git" => GitTransport::Git,
            "file" => {
                let path = url
                    .to_file_path()
                    .map_err(|()| format!("`{input}` is not a local file URL"))?;
                return Ok(Self {
                    url: path.to_string_lossy().into_owned(),
                    transport: GitTransport::Local(path),
                    host: None,
                    port: None,
                    credentials: None,
                });
            }
            other => {
                return Err(format!(
                    "git sources may be https://, ssh:// (or user@host:path), git://, http:// or \
                     local paths; `{other}://` is not supported"
                ));
            }
        };
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("`{input}` names no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let decode = |s: &str| {
            percent_decode(s)
                .ok_or_else(|| "the URL's user name or password is not UTF-8".to_string())
        };
        let username = decode(url.username())?;
        let password = url.password().map(decode).transpose()?;
        let credentials = match (&transport, username.is_empty(), password) {
            // An ssh account name is not a secret; a password is.
            (GitTransport::Ssh, _, None) => None,
            (GitTransport::Ssh, _, Some(password)) => Some(Credentials {
                username: username.clone(),
                password: Some(password),
            }),
            (_, true, None) => None,
            (_, _, password) => Some(Credentials {
                username: username.clone(),
                password,
            }),
        };
        if credentials.is_some() {
            // Cannot fail for URLs with a host (checked above).
            let _ = url.set_password(None);
            if transport != GitTransport::Ssh {
                let _ = url.set_username("");
            }
        }
        Ok(Self {
            port: url.port_or_known_default().or(match transport {
                GitTransport::Ssh => Some(22),
                GitTransport::Git => Some(9418),
                _ => None,
            }),
            transport,
            url: url.to_string(),
            host: Some(host),
            credentials,
        })
    }
}

/// `[user@]host:path` when `input` is git's scp-like form: a `:` before any `/`, and a
/// host before it.
fn scp_like(input: &str) -> Option<(Option<&str>, &str, &str)> {
    let colon = if input.starts_with('[') {
        // `[::1]:repo` or `user@[::1]:repo` keep the address's colons inside brackets.
        input.find("]:").map(|i| i + 1)?
    } else {
        let (user_end, rest) = match input.split_once('@') {
            Some((u, r)) if !u.contains('/') && !u.contains(':') => (u.len() + 1, r),
            _ => (0, input),
        };
        if rest.starts_with('[') {
            rest.find("]:").map(|i| user_end + i + 1)?
        } else {
            input.find(':')?
        }
    };
    let (before, path) = (&input[..colon], &input[colon + 1..]);
    if before.contains('/') || before.is_empty() {
        return None;
    }
    let (user, host) = match before.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, before),
    };
    (!host.is_empty()).then_some((user, host, path))
}

fn percent_decode(s: &str) -> Option<String> {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(|c| c.into_owned())
}

/// Why an address is not for fetching from unless the operator allows it: loopback,
/// private (RFC 1918, unique-local), link-local, carrier-grade NAT, unspecified,
/// multicast or broadcast addresses reach the server itself or its private network.
pub fn restricted_address(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            if v4.is_loopback() {
                Some("loopback")
            } else if v4.is_private() {
                Some("private")
            } else if v4.is_link_local() {
                Some("link-local")
            } else if a == 100 && (64..128).contains(&b) {
                Some("carrier-grade NAT")
            } else if v4.is_unspecified() || a == 0 {
                Some("unspecified")
            } else if v4.is_multicast() || v4.is_broadcast() {
                Some("multicast or broadcast")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return restricted_address(IpAddr::V4(v4));
            }
            let seg = v6.segments();
            // The IPv4 address a translation or tunnelling prefix carries: NAT64's
            // well-known 64:ff9b::/96 (last 32 bits) and 6to4's 2002::/16 (bits 16-48).
            let embedded = |hi: u16, lo: u16| {
                let [a, b] = hi.to_be_bytes();
                let [c, d] = lo.to_be_bytes();
                std::net::Ipv4Addr::new(a, b, c, d)
            };
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if seg[..6] == [0; 6] {
                // ::a.b.c.d, IPv4-compatible (deprecated): `[::127.0.0.1]` is loopback.
                Some(
                    restricted_address(IpAddr::V4(embedded(seg[6], seg[7])))
                        .unwrap_or("IPv4-compatible"),
                )
            } else if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                restricted_address(IpAddr::V4(embedded(seg[6], seg[7])))
            } else if seg[0] == 0x64 && seg[1] == 0xff9b {
                Some("private") // 64:ff9b:1::/48, local-use NAT64
            } else if seg[0] == 0x2002 {
                restricted_address(IpAddr::V4(embedded(seg[1], seg[2])))
            } else if v6.is_unique_local() || seg[0] & 0xffc0 == 0xfec0 {
                Some("private") // fc00::/7, and fec0::/10 (site-local, deprecated)
            } else if v6.is_unicast_link_local() {
                Some("link-local")
            } else if v6.is_multicast() {
                Some("multicast")
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> GitLocation {
        GitLocation::parse(s).unwrap()
    }

    #[test]
    fn urls_lose_their_credentials() {
        let l = parse("https://ci-bot:ghp_secret@github.example/org/repo.git");
        assert_eq!(l.transport, GitTransport::Https);
        assert_eq!(l.url, "https://github.example/org/repo.git");
        assert_eq!(l.host.as_deref(), Some("github.example"));
        assert_eq!(l.port, Some(443));
        let c = l.credentials.unwrap();
        assert_eq!(
            (c.username.as_str(), c.password.as_deref()),
            ("ci-bot", Some("ghp_secret"))
        );
        assert!(!format!("{c:?}").contains("secret"));
        // A token as the user name alone is a secret too; percent-escapes are decoded.
        let l = parse("http://ghp_tok%40en@10.1.2.3:8080/r");
        assert_eq!(l.url, "http://10.1.2.3:8080/r");
        assert_eq!(l.credentials.unwrap().username, "ghp_tok@en");
        // The ssh account stays; an ssh password does not.
        let l = parse("ssh://git@host.example:2222/r.git");
        assert_eq!(
            (l.url.as_str(), l.port, l.credentials),
            ("ssh://git@host.example:2222/r.git", Some(2222), None)
        );
        let l = parse("ssh://git:pw@host.example/r.git");
        assert_eq!(l.url, "ssh://git@host.example/r.git");
        assert_eq!(l.credentials.unwrap().password.as_deref(), Some("pw"));
        assert_eq!(parse("https://h.example/r").credentials, None);
    }

    #[test]
    fn scp_like_local_and_file_forms_are_told_apart() {
        let l = parse("git@github.example:org/repo.git");
        assert_eq!(l.transport, GitTransport::Ssh);
        assert_eq!(l.host.as_deref(), Some("github.example"));
        let l = parse("[::1]:repo");
        assert_eq!(l.host.as_deref(), Some("::1"));
        // A local path with `@` or `:` after a `/` is a path (the bypass of the review).
        for local in ["/srv/outside/a@b/repo", "./x:y", "/tmp/r"] {
            assert_eq!(
                parse(local).transport,
                GitTransport::Local(PathBuf::from(local)),
                "{local}"
            );
        }
        assert_eq!(
            parse("file:///outside/repo").transport,
            GitTransport::Local(PathBuf::from("/outside/repo"))
        );
        assert_eq!(parse("git://h.example/r").port, Some(9418));
        for bad in ["ftp://h/r", "https://", "", "file://host/x"] {
            assert!(GitLocation::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn private_and_local_addresses_are_named() {
        for (ip, why) in [
            ("127.0.0.1", Some("loopback")),
            ("10.2.3.4", Some("private")),
            ("192.168.1.1", Some("private")),
            ("172.20.0.1", Some("private")),
            ("169.254.169.254", Some("link-local")),
            ("100.64.0.1", Some("carrier-grade NAT")),
            ("0.0.0.0", Some("unspecified")),
            ("::1", Some("loopback")),
            ("fd00::1", Some("private")),
            ("fe80::1", Some("link-local")),
            ("::ffff:127.0.0.1", Some("loopback")),
            // IPv6 forms that stand for IPv4 or internal ranges (issue 37, finding 9).
            ("::127.0.0.1", Some("loopback")),
            ("::10.0.0.1", Some("private")),
            ("::8.8.8.8", Some("IPv4-compatible")),
            ("64:ff9b::127.0.0.1", Some("loopback")),
            ("64:ff9b::a9fe:a9fe", Some("link-local")),
            ("64:ff9b::8.8.8.8", None),
            ("64:ff9b:1::1", Some("private")),
            ("2002:7f00:1::1", Some("loopback")),
            ("2002:c0a8:101::1", Some("private")),
            ("fec0::1", Some("private")),
            ("feff::1", Some("private")),
            ("140.82.112.3", None),
            ("2606:4700::1111", None),
        ] {
            assert_eq!(restricted_address(ip.parse().unwrap()), why, "{ip}");
        }
    }
}
