//! Which addresses a script's `fetch` may reach: not the host's own, its network's, or a
//! cloud's metadata service, unless the settings name the host (`webFetchPrivateHosts`).
//!
//! The check is made on the address connected to: names are resolved here, by the
//! client's resolver, and the client connects only to the addresses this resolver passed,
//! so no second lookup can answer otherwise (DNS rebinding). A URL whose host is an address
//! is checked before anything is sent, since no resolver sees it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// The host names (and addresses, as a URL writes them) whose private addresses `fetch`
/// may reach, read at each request: the settings may change while a session runs.
pub(crate) type PrivateHosts = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// Why `fetch` does not reach `ip` by default, or `None` for a public address.
pub(crate) fn private_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => private_v6(v6),
    }
}

fn private_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_loopback() => "a loopback address",
        (169, 254, _) => "a link-local address (where clouds serve instance metadata)",
        _ if ip.is_private() => "a private network address",
        (0, _, _) => "an address of this host's own network (0.0.0.0/8)",
        (100, 64..=127, _) => "a shared address (carrier-grade NAT, and some clouds' metadata)",
        (192, 0, 0) => "an IETF protocol address",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (198, 18..=19, _) => "a benchmarking address",
        _ if ip.is_multicast() => "a multicast address",
        _ if a >= 240 => "a reserved address",
        _ => return None,
    })
}

fn private_v6(ip: Ipv6Addr) -> Option<&'static str> {
    // An IPv4 address written as IPv6 is the IPv4 address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return private_v4(v4);
    }
    let segments = ip.segments();
    let embedded = |high: u16, low: u16| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    Some(match segments {
        _ if ip.is_loopback() => "a loopback address",
        _ if ip.is_unspecified() => "the unspecified address",
        // IPv4-compatible (deprecated) and NAT64 addresses reach the IPv4 address inside.
        [0, 0, 0, 0, 0, 0, high, low] | [0x64, 0xff9b, 0, 0, 0, 0, high, low] => return private_v4(embedded(high, low)),
        // 6to4 carries the IPv4 address in its second and third segments.
        [0x2002, high, low, ..] => return private_v4(embedded(high, low)),
        [first, ..] if first & 0xffc0 == 0xfe80 => "a link-local address",
        [first, ..] if first & 0xffc0 == 0xfec0 => "a site-local address",
        [first, ..] if first & 0xfe00 == 0xfc00 => "a unique local address (where some clouds serve instance metadata)",
        [first, ..] if first & 0xff00 == 0xff00 => "a multicast address",
        [0x2001, 0xdb8, ..] => "a documentation address",
        // Teredo tunnels to an address it hides.
        [0x2001, 0, ..] => "a Teredo address",
        _ => return None,
    })
}

/// Whether `host` (as the URL writes it, lowercase) is one the settings let reach private
/// addresses.
pub(crate) fn allowed_private(host: &str, private_hosts: &PrivateHosts) -> bool {
    private_hosts().iter().any(|allowed| allowed.eq_ignore_ascii_case(host))
}

/// Why a URL's host that is an address is refused, when it is.
pub(crate) fn refused_literal(host: &url::Host<&str>, written: &str, private_hosts: &PrivateHosts) -> Option<String> {
    let ip = match host {
        url::Host::Ipv4(v4) => IpAddr::V4(*v4),
        url::Host::Ipv6(v6) => IpAddr::V6(*v6),
        url::Host::Domain(_) => return None,
    };
    let kind = private_kind(ip)?;
    (!allowed_private(written, private_hosts)).then(|| refusal(written, None, kind))
}

/// The sentence of a refused host.
fn refusal(host: &str, resolved: Option<IpAddr>, kind: &str) -> String {
    let what = match resolved {
        Some(ip) => format!("`{host}` resolves to {ip}, {kind}"),
        None => format!("`{host}` is {kind}"),
    };
    format!("{what}, which fetch does not reach unless the setting webFetchPrivateHosts names `{host}`")
}

/// The client's resolver: the system's lookup, with the addresses `fetch` may not reach
/// taken out; a name left with none fails with the reason.
pub(crate) struct CheckedResolver {
    pub private_hosts: PrivateHosts,
}

/// A name whose every address is refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refused(pub String);

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let private_hosts = self.private_hosts.clone();
        let name = name.as_str().to_ascii_lowercase();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            if allowed_private(&name, &private_hosts) {
                return Ok(Box::new(found.into_iter()) as reqwest::dns::Addrs);
            }
            let first_refused = found.iter().find_map(|address| private_kind(address.ip()).map(|kind| (address.ip(), kind)));
            let public: Vec<SocketAddr> = found.into_iter().filter(|address| private_kind(address.ip()).is_none()).collect();
            match (public.is_empty(), first_refused) {
                (true, Some((ip, kind))) => Err(Box::new(Refused(refusal(&name, Some(ip), kind))) as _),
                _ => Ok(Box::new(public.into_iter()) as reqwest::dns::Addrs),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_private_address_is_refused_and_public_ones_pass() {
        for refused in [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.100.100.200",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "fe80::1",
            "fd00:ec2::254",
            "ff02::1",
            "2001:db8::1",
        ] {
            let ip: IpAddr = refused.parse().unwrap();
            assert!(private_kind(ip).is_some(), "{refused} must be refused");
        }
        for public in ["1.1.1.1", "140.82.112.3", "2606:4700:4700::1111", "::ffff:8.8.8.8", "2002:0808:0808::"] {
            let ip: IpAddr = public.parse().unwrap();
            assert_eq!(private_kind(ip), None, "{public} is public");
        }
    }

    #[test]
    fn a_literal_is_refused_unless_named_as_written() {
        let none: PrivateHosts = Arc::new(Vec::new);
        let named: PrivateHosts = Arc::new(|| vec!["127.0.0.1".to_string(), "[::1]".to_string()]);
        let url = url::Url::parse("http://127.0.0.1:8080/").unwrap();
        let refused = refused_literal(&url.host().unwrap(), url.host_str().unwrap(), &none).unwrap();
        assert!(refused.contains("`127.0.0.1` is a loopback address") && refused.contains("webFetchPrivateHosts"), "{refused}");
        assert_eq!(refused_literal(&url.host().unwrap(), url.host_str().unwrap(), &named), None);
        let url = url::Url::parse("http://[::1]/").unwrap();
        assert_eq!(refused_literal(&url.host().unwrap(), url.host_str().unwrap(), &named), None);
        // The URL parser reads these as the loopback address: the check sees the address.
        for sneaky in ["http://2130706433/", "http://0x7f.1/", "http://[::ffff:7f00:1]/", "http://127.1/"] {
            let url = url::Url::parse(sneaky).unwrap();
            assert!(refused_literal(&url.host().unwrap(), url.host_str().unwrap(), &none).is_some(), "{sneaky}");
        }
    }
}
