//! Where the server listens and who can reach it: `PALGRAPH_HOST` resolved to addresses (an
//! IP address, or a name such as `localhost`), and the start-up checks that refuse to expose
//! a server anyone could use as any user.
//!
//! - Without authentication, every address the host resolves to must be loopback: the
//!   local mode has one user and no credentials.
//! - With a trusted user header, an address beyond loopback also needs
//!   `PALGRAPH_TRUSTED_USER_HEADER_BEHIND_PROXY=true`: the header is a claim any client can
//!   make, so only a proxy that sets it (replacing the client's) may reach the port. This
//!   holds whatever else is configured, since a request without a bearer token or key is
//!   still judged by the header.

use std::net::{IpAddr, SocketAddr};

use super::ServeError;
use crate::auth::AuthConfig;

/// The addresses `host` (an IP address, in brackets or not, or a name) resolves to with
/// `port`, in the resolver's order, without repeats.
///
/// # Errors
/// [`ServeError::Host`] when it does not resolve, or resolves to nothing.
pub(crate) async fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, ServeError> {
    let name = host.trim();
    let name = name
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(name);
    let failed = |source: std::io::Error| ServeError::Host {
        host: host.to_string(),
        source,
    };
    if name.is_empty() {
        return Err(failed(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "no address or host name given",
        )));
    }
    let mut addrs: Vec<SocketAddr> = Vec::new();
    for a in tokio::net::lookup_host((name, port))
        .await
        .map_err(failed)?
    {
        if !addrs.contains(&a) {
            addrs.push(a);
        }
    }
    if addrs.is_empty() {
        return Err(failed(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the name has no address",
        )));
    }
    Ok(addrs)
}

/// Refuses to listen on `addrs` when that would let anyone who reaches them act as any user
/// (see the module docs).
///
/// # Errors
/// [`ServeError::Unprotected`] or [`ServeError::TrustedHeaderExposed`], naming the first
/// address beyond loopback.
pub(crate) fn check(
    addrs: &[SocketAddr],
    auth: &AuthConfig,
    trusted_header_behind_proxy: bool,
) -> Result<(), ServeError> {
    let Some(exposed) = addrs.iter().map(SocketAddr::ip).find(|ip| !is_loopback(ip)) else {
        return Ok(());
    };
    if !auth.enabled() {
        return Err(ServeError::Unprotected(exposed));
    }
    match auth.trusted_header() {
        Some(header) if !trusted_header_behind_proxy => Err(ServeError::TrustedHeaderExposed {
            addr: exposed,
            header: header.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Loopback, also as an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`).
fn is_loopback(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or(v6.is_loopback(), |v4| v4.is_loopback()),
        IpAddr::V4(v4) => v4.is_loopback(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter()
            .map(|a| SocketAddr::new(a.parse().expect("an IP address"), 8123))
            .collect()
    }

    fn header_only() -> AuthConfig {
        AuthConfig::new(None, None, Some("x-forwarded-user")).expect("valid settings")
    }

    fn keys_and_header() -> AuthConfig {
        AuthConfig::new(
            None,
            Some("a-long-random-key-0123456789=alice"),
            Some("x-forwarded-user"),
        )
        .expect("valid settings")
    }

    #[test]
    fn without_auth_every_address_must_be_loopback() {
        let none = AuthConfig::default();
        for ok in [
            &["127.0.0.1"][..],
            &["::1", "127.0.0.1"],
            &["127.0.1.1"],
            &["::ffff:127.0.0.1"],
        ] {
            assert!(check(&addrs(ok), &none, false).is_ok(), "{ok:?}");
        }
        for bad in [
            &["0.0.0.0"][..],
            &["::"],
            &["127.0.0.1", "192.168.1.5"],
            &["::1", "fe80::1"],
        ] {
            match check(&addrs(bad), &none, true) {
                Err(ServeError::Unprotected(ip)) => assert!(!is_loopback(&ip)),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_trusted_header_beyond_loopback_needs_the_acknowledgment() {
        for auth in [header_only(), keys_and_header()] {
            assert!(check(&addrs(&["127.0.0.1"]), &auth, false).is_ok());
            match check(&addrs(&["0.0.0.0"]), &auth, false) {
                Err(e @ ServeError::TrustedHeaderExposed { .. }) => {
                    let said = e.to_string();
                    assert!(
                        said.contains("PALGRAPH_TRUSTED_USER_HEADER_BEHIND_PROXY=true"),
                        "{said}"
                    );
                    assert!(said.contains("act as any user"), "{said}");
                }
                other => panic!("{other:?}"),
            }
            assert!(check(&addrs(&["0.0.0.0"]), &auth, true).is_ok());
        }
        let keys = AuthConfig::new(None, Some("a-long-random-key-0123456789=alice"), None)
            .expect("valid settings");
        assert!(check(&addrs(&["0.0.0.0"]), &keys, false).is_ok());
    }

    #[tokio::test]
    async fn localhost_and_ip_addresses_resolve_and_bad_names_do_not() {
        let local = resolve("localhost", 0).await.expect("localhost resolves");
        assert!(local.iter().all(|a| is_loopback(&a.ip())), "{local:?}");
        assert_eq!(
            resolve("0.0.0.0", 80).await.expect("an IP address"),
            addrs(&["0.0.0.0"])
                .into_iter()
                .map(|a| SocketAddr::new(a.ip(), 80))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            resolve("[::1]", 5).await.expect("a bracketed IPv6 address")[0],
            SocketAddr::new("::1".parse().expect("::1"), 5)
        );
        for bad in ["", "  ", "no-such-host.invalid", "999.1.1.1"] {
            match resolve(bad, 0).await {
                Err(e @ ServeError::Host { .. }) => {
                    assert!(e.to_string().contains("PALGRAPH_HOST"), "{e}")
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }
}
