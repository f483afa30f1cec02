//! Kubernetes' CEL libraries that the `cel` crate lacks, as the apiserver's base
//! environment enables them for stored expressions at v1.36 (`k8s.io/apiserver/pkg/cel/
//! library`): lists (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`), IP
//! (`ip`, `isIP`, `ip.isCanonical`, `family`, `isUnspecified`, `isLoopback`,
//! `isLinkLocalMulticast`, `isLinkLocalUnicast`, `isGlobalUnicast`, `string`), CIDR
//! (`cidr`, `isCIDR`, `containsIP`, `containsCIDR`, `ip`, `prefixLength`, `masked`,
//! `string`) and URL (`url`, `isURL`, `getScheme`, `getHost`, `getHostname`, `getPort`,
//! `getEscapedPath`, `getQuery`); and the runtime half of Kubernetes' cost estimator
//! (`library.CostEstimator.CallCost`, [`call_cost`]) for the crate's cost meter.
//!
//! **Why hand-written parsers.** Upstream parses addresses with Go's `net/netip` and URLs
//! with Go's `net/url`, and its errors quote Go's messages ("IP Address \"x\" parse
//! error during conversion from string: ParseAddr(\"x\"): unable to parse IP"). Rust's
//! `std::net` parsers accept nearly the same addresses but word nothing alike and know
//! no zones, and the `url` crate implements WHATWG URLs (it lower-cases hosts, resolves
//! dot segments, rejects what Go accepts), so [`parse_addr`], [`parse_prefix`] and
//! [`GoUrl::parse`] follow Go's source step by step, messages included. Values are
//! `std::net` addresses, whose text form is Go's (RFC 5952 for IPv6).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cel::common::types::{
    CelBool, CelInt, CelList, CelMap, CelMapKey, CelString, Kind, Type, DYN_TYPE, LIST_TYPE,
};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::{Env, ExecutionError};

use super::cel::list_items;

// ---- Go's strconv.Quote ------------------------------------------------------------------

/// Go's `strconv.Quote`, for the messages that quote their input.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// ---- Go's netip.ParseAddr / ParsePrefix --------------------------------------------------

/// An address as Go's `netip.Addr` holds one: the zone kept (upstream refuses it
/// after parsing, with its own message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoAddr {
    pub ip: IpAddr,
    pub zone: String,
}

fn addr_error(input: &str, msg: &str, at: &str) -> String {
    if at.is_empty() {
        format!("ParseAddr({}): {msg}", go_quote(input))
    } else {
        format!(
            "ParseAddr({}): {msg} (at {})",
            go_quote(input),
            go_quote(at)
        )
    }
}

/// Go's `parseIPv4Fields` over `input[off..end]`.
fn parse_ipv4_fields(input: &str, off: usize, end: usize) -> Result<[u8; 4], String> {
    let s = &input.as_bytes()[off..end];
    let (mut val, mut pos, mut dig_len) = (0u32, 0usize, 0);
    let mut fields = [0u8; 4];
    for i in 0..s.len() {
        let c = s[i];
        if c.is_ascii_digit() {
            if dig_len == 1 && val == 0 {
                return Err(addr_error(
                    input,
                    "IPv4 field has octet with leading zero",
                    "",
                ));
            }
            val = val * 10 + u32::from(c - b'0');
            dig_len += 1;
            if val > 255 {
                return Err(addr_error(input, "IPv4 field has value >255", ""));
            }
        } else if c == b'.' {
            if i == 0 || i == s.len() - 1 || s[i - 1] == b'.' {
                return Err(addr_error(
                    input,
                    "IPv4 field must have at least one digit",
                    &input[off + i..end],
                ));
            }
            if pos == 3 {
                return Err(addr_error(input, "IPv4 address too long", ""));
            }
            fields[pos] = val as u8;
            pos += 1;
            val = 0;
            dig_len = 0;
        } else {
            return Err(addr_error(
                input,
                "unexpected character",
                &input[off + i..end],
            ));
        }
    }
    if pos < 3 {
        return Err(addr_error(input, "IPv4 address too short", ""));
    }
    fields[3] = val as u8;
    Ok(fields)
}

/// Go's `parseIPv6`.
fn parse_ipv6(input: &str) -> Result<GoAddr, String> {
    let (mut s, zone) = match input.find('%') {
        Some(i) => {
            let zone = &input[i + 1..];
            if zone.is_empty() {
                return Err(addr_error(input, "zone must be a non-empty string", ""));
            }
            (&input[..i], zone)
        }
        None => (input, ""),
    };
    let mut ip = [0u8; 16];
    let mut ellipsis: i32 = -1;
    if s.len() >= 2 && s.starts_with("::") {
        ellipsis = 0;
        s = &s[2..];
        if s.is_empty() {
            return Ok(GoAddr {
                ip: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                zone: zone.to_string(),
            });
        }
    }
    let mut i = 0usize;
    while i < 16 {
        let b = s.as_bytes();
        let mut off = 0;
        let mut acc: u32 = 0;
        while off < b.len() {
            let c = b[off];
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => break,
            };
            acc = (acc << 4) + u32::from(d);
            if off > 3 {
                return Err(addr_error(
                    input,
                    "each group must have 4 or less digits",
                    s,
                ));
            }
            if acc > 0xffff {
                return Err(addr_error(input, "IPv6 field has value >=2^16", s));
            }
            off += 1;
        }
        if off == 0 {
            return Err(addr_error(
                input,
                "each colon-separated field must have at least one digit",
                s,
            ));
        }
        if off < b.len() && b[off] == b'.' {
            if ellipsis < 0 && i != 12 {
                return Err(addr_error(
                    input,
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    s,
                ));
            }
            if i + 4 > 16 {
                return Err(addr_error(
                    input,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    s,
                ));
            }
            let mut end = input.len();
            if !zone.is_empty() {
                end -= zone.len() + 1;
            }
            let f = parse_ipv4_fields(input, end - s.len(), end)?;
            ip[i..i + 4].copy_from_slice(&f);
            s = "";
            i += 4;
            break;
        }
        ip[i] = (acc >> 8) as u8;
        ip[i + 1] = acc as u8;
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return Err(addr_error(input, "unexpected character, want colon", s));
        } else if s.len() == 1 {
            return Err(addr_error(
                input,
                "colon must be followed by more characters",
                s,
            ));
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis >= 0 {
                return Err(addr_error(input, "multiple :: in address", s));
            }
            ellipsis = i as i32;
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(addr_error(input, "trailing garbage after address", s));
    }
    if i < 16 {
        if ellipsis < 0 {
            return Err(addr_error(input, "address string too short", ""));
        }
        let e = ellipsis as usize;
        let n = 16 - i;
        for j in (e..i).rev() {
            ip[j + n] = ip[j];
        }
        for b in ip.iter_mut().skip(e).take(n) {
            *b = 0;
        }
    } else if ellipsis >= 0 {
        return Err(addr_error(
            input,
            "the :: must expand to at least one field of zeros",
            "",
        ));
    }
    Ok(GoAddr {
        ip: IpAddr::V6(Ipv6Addr::from(ip)),
        zone: zone.to_string(),
    })
}

/// Go's `netip.ParseAddr`, with its error text.
pub fn parse_addr(s: &str) -> Result<GoAddr, String> {
    for c in s.bytes() {
        match c {
            b'.' => {
                let f = parse_ipv4_fields(s, 0, s.len())?;
                return Ok(GoAddr {
                    ip: IpAddr::V4(Ipv4Addr::from(f)),
                    zone: String::new(),
                });
            }
            b':' => return parse_ipv6(s),
            b'%' => return Err(addr_error(s, "missing IPv6 address", "")),
            _ => {}
        }
    }
    Err(addr_error(s, "unable to parse IP", ""))
}

fn is_4in6(ip: &IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// Go's `netip.Addr.String()` (without a zone: upstream refuses zones).
fn addr_string(ip: &IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => format!("::ffff:{v4}"),
            None => go_ipv6_string(v6),
        },
    }
}

/// Go's `appendTo6`: the first longest run of two or more zero groups becomes `::`.
fn go_ipv6_string(v6: &Ipv6Addr) -> String {
    let seg = v6.segments();
    let (mut zs, mut ze) = (255usize, 255usize);
    for i in 0..8 {
        let mut j = i;
        while j < 8 && seg[j] == 0 {
            j += 1;
        }
        let l = j - i;
        if l >= 2 && (zs == 255 || l > ze - zs) {
            zs = i;
            ze = j;
        }
    }
    let mut out = String::new();
    let mut i = 0;
    while i < 8 {
        if i == zs {
            out.push_str("::");
            i = ze;
            if i >= 8 {
                break;
            }
        } else if i > 0 {
            out.push(':');
        }
        out.push_str(&format!("{:x}", seg[i]));
        i += 1;
    }
    out
}

/// upstream `parseIPAddr`: Go's parser, then no zone and no IPv4-mapped IPv6.
fn parse_ip_addr(raw: &str) -> Result<IpAddr, String> {
    let addr = parse_addr(raw).map_err(|e| {
        format!(
            "IP Address {} parse error during conversion from string: {e}",
            go_quote(raw)
        )
    })?;
    if !addr.zone.is_empty() {
        return Err(format!(
            "IP address {} with zone value is not allowed",
            go_quote(raw)
        ));
    }
    if is_4in6(&addr.ip) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(raw)
        ));
    }
    Ok(addr.ip)
}

/// Go's `netip.ParsePrefix`, with its error text.
pub fn parse_prefix(s: &str) -> Result<(IpAddr, u8), String> {
    let err = |msg: &str| format!("netip.ParsePrefix({}): {msg}", go_quote(s));
    let Some(i) = s.rfind('/') else {
        return Err(err("no '/'"));
    };
    let addr = parse_addr(&s[..i]).map_err(|e| err(&e))?;
    if matches!(addr.ip, IpAddr::V6(_)) && !addr.zone.is_empty() {
        return Err(err("IPv6 zones cannot be present in a prefix"));
    }
    let bits_str = &s[i + 1..];
    let bad = || err(&format!("bad bits after slash: {}", go_quote(bits_str)));
    let b = bits_str.as_bytes();
    if b.len() > 1 && !(b'1'..=b'9').contains(&b[0]) {
        return Err(bad());
    }
    // strconv.Atoi: an optional sign, then digits (a lone sign or nothing fails)
    let digits = bits_str.strip_prefix(['+', '-']).unwrap_or(bits_str);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let bits: i64 = bits_str.parse().map_err(|_| bad())?;
    let max = if matches!(addr.ip, IpAddr::V6(_)) {
        128
    } else {
        32
    };
    if !(0..=max).contains(&bits) {
        return Err(err("prefix length out of range"));
    }
    Ok((addr.ip, bits as u8))
}

// ---- IP and CIDR values -----------------------------------------------------------------

static IP_TYPE: Type = Type::new_unspecified_type("net.IP");
static CIDR_TYPE: Type = Type::new_unspecified_type("net.CIDR");
static URL_TYPE: Type = Type::new_unspecified_type("kubernetes.URL");

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CelIp(pub IpAddr);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CelCidr {
    pub addr: IpAddr,
    pub bits: u8,
}

macro_rules! opaque_val {
    ($t:ty, $ty:expr) => {
        impl Val for $t {
            fn get_type(&self) -> &Type {
                &$ty
            }
            fn cel_type() -> &'static Type {
                &$ty
            }
            fn equals(&self, other: &dyn Val) -> bool {
                other.downcast_ref::<$t>().is_some_and(|o| o == self)
            }
            fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
                Box::new(self.clone())
            }
            fn as_any(&self) -> Option<&dyn std::any::Any> {
                Some(self)
            }
        }
        impl StaticVal for $t {}
    };
}
opaque_val!(CelIp, IP_TYPE);
opaque_val!(CelCidr, CIDR_TYPE);
opaque_val!(CelUrl, URL_TYPE);

fn fn_err(function: &str, msg: String) -> ExecutionError {
    ExecutionError::function_error(function, msg)
}

fn string_to_ip(s: &CelString<'_>) -> Result<CelIp, ExecutionError> {
    parse_ip_addr(s.inner())
        .map(CelIp)
        .map_err(|e| fn_err("ip", e))
}
fn is_ip(s: &CelString<'_>) -> CelBool {
    CelBool::from(parse_ip_addr(s.inner()).is_ok())
}
fn ip_is_canonical(s: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let ip = parse_ip_addr(s.inner()).map_err(|e| fn_err("ip.isCanonical", e))?;
    Ok(CelBool::from(addr_string(&ip) == s.inner()))
}
fn ip_to_string(ip: &CelIp) -> CelString<'static> {
    CelString::from(addr_string(&ip.0))
}
fn ip_family(ip: &CelIp) -> CelInt {
    CelInt::from(match ip.0 {
        IpAddr::V4(_) => 4,
        IpAddr::V6(_) => 6,
    })
}

/// Go's predicates unmap an IPv4-mapped IPv6 address first.
fn unmapped(ip: &IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(*ip, IpAddr::V4),
        v4 => *v4,
    }
}
fn go_is_loopback(ip: &IpAddr) -> bool {
    match unmapped(ip) {
        IpAddr::V4(v4) => v4.octets()[0] == 127,
        IpAddr::V6(v6) => v6 == Ipv6Addr::LOCALHOST,
    }
}
fn go_is_multicast(ip: &IpAddr) -> bool {
    match unmapped(ip) {
        IpAddr::V4(v4) => v4.octets()[0] & 0xf0 == 0xe0,
        IpAddr::V6(v6) => v6.octets()[0] == 0xff,
    }
}
fn go_is_link_local_unicast(ip: &IpAddr) -> bool {
    match unmapped(ip) {
        IpAddr::V4(v4) => v4.octets()[0] == 169 && v4.octets()[1] == 254,
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}
fn go_is_link_local_multicast(ip: &IpAddr) -> bool {
    match unmapped(ip) {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            o[0] == 224 && o[1] == 0 && o[2] == 0
        }
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}
fn go_is_unspecified(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => *v4 == Ipv4Addr::UNSPECIFIED,
        IpAddr::V6(v6) => *v6 == Ipv6Addr::UNSPECIFIED,
    }
}
fn go_is_global_unicast(ip: &IpAddr) -> bool {
    let u = unmapped(ip);
    if let IpAddr::V4(v4) = u {
        if v4 == Ipv4Addr::UNSPECIFIED || v4 == Ipv4Addr::BROADCAST {
            return false;
        }
    }
    u != IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        && !go_is_loopback(&u)
        && !go_is_multicast(&u)
        && !go_is_link_local_unicast(&u)
}
fn ip_is_unspecified(ip: &CelIp) -> CelBool {
    CelBool::from(go_is_unspecified(&ip.0))
}
fn ip_is_loopback(ip: &CelIp) -> CelBool {
    CelBool::from(go_is_loopback(&ip.0))
}
fn ip_is_link_local_multicast(ip: &CelIp) -> CelBool {
    CelBool::from(go_is_link_local_multicast(&ip.0))
}
fn ip_is_link_local_unicast(ip: &CelIp) -> CelBool {
    CelBool::from(go_is_link_local_unicast(&ip.0))
}
fn ip_is_global_unicast(ip: &CelIp) -> CelBool {
    CelBool::from(go_is_global_unicast(&ip.0))
}

/// upstream `parseCIDR`.
fn parse_cidr(raw: &str) -> Result<CelCidr, String> {
    let (addr, bits) = parse_prefix(raw)
        .map_err(|e| format!("network address parse error during conversion from string: {e}"))?;
    if is_4in6(&addr) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(raw)
        ));
    }
    Ok(CelCidr { addr, bits })
}

fn bits_of(ip: &IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(*v4)),
        IpAddr::V6(v6) => u128::from(*v6),
    }
}
fn width(ip: &IpAddr) -> u32 {
    match ip {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}
/// The address with all but the first `bits` bits cleared.
fn mask(ip: &IpAddr, bits: u8) -> IpAddr {
    let w = width(ip);
    let keep = u32::from(bits).min(w);
    let m: u128 = if keep == 0 {
        0
    } else {
        (!0u128 << (128 - keep)) >> (128 - w)
    };
    let v = bits_of(ip) & m;
    match ip {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(v as u32)),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(v)),
    }
}
impl CelCidr {
    /// Go's `Prefix.Contains`.
    fn contains(&self, ip: &IpAddr) -> bool {
        width(&self.addr) == width(ip) && mask(ip, self.bits) == mask(&self.addr, self.bits)
    }
    /// Go's `Prefix.Overlaps`.
    fn overlaps(&self, o: &CelCidr) -> bool {
        if self == o {
            return true;
        }
        if width(&self.addr) != width(&o.addr) {
            return false;
        }
        let min = self.bits.min(o.bits);
        min == 0 || mask(&self.addr, min) == mask(&o.addr, min)
    }
}

fn string_to_cidr(s: &CelString<'_>) -> Result<CelCidr, ExecutionError> {
    parse_cidr(s.inner()).map_err(|e| {
        fn_err(
            "cidr",
            format!("network address parse error during conversion from string: {e}"),
        )
    })
}
fn is_cidr(s: &CelString<'_>) -> CelBool {
    CelBool::from(parse_cidr(s.inner()).is_ok())
}
fn cidr_to_string(c: &CelCidr) -> CelString<'static> {
    CelString::from(format!("{}/{}", addr_string(&c.addr), c.bits))
}
fn cidr_contains_ip(c: &CelCidr, ip: &CelIp) -> CelBool {
    CelBool::from(c.contains(&ip.0))
}
fn cidr_contains_ip_string(c: &CelCidr, s: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let ip = parse_ip_addr(s.inner()).map_err(|e| fn_err("containsIP", e))?;
    Ok(CelBool::from(c.contains(&ip)))
}
fn cidr_contains_cidr(c: &CelCidr, o: &CelCidr) -> CelBool {
    CelBool::from(c.overlaps(o) && c.bits <= o.bits)
}
fn cidr_contains_cidr_string(c: &CelCidr, s: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let o = parse_cidr(s.inner()).map_err(|e| {
        fn_err(
            "containsCIDR",
            format!("network address parse error during conversion from string: {e}"),
        )
    })?;
    Ok(CelBool::from(c.overlaps(&o) && c.bits <= o.bits))
}
fn cidr_ip(c: &CelCidr) -> CelIp {
    CelIp(c.addr)
}
fn cidr_prefix_length(c: &CelCidr) -> CelInt {
    CelInt::from(i64::from(c.bits))
}
fn cidr_masked(c: &CelCidr) -> CelCidr {
    CelCidr {
        addr: mask(&c.addr, c.bits),
        bits: c.bits,
    }
}

// ---- Go's net/url -------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// Go's `shouldEscape`.
fn should_escape(c: u8, mode: Encoding) -> bool {
    use Encoding::*;
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Host | Zone)
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Path => return c == b'?',
            UserPassword => return matches!(c, b'@' | b'/' | b'?' | b':'),
            QueryComponent => return true,
            Fragment => return false,
            _ => {}
        },
        _ => {}
    }
    if mode == Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

fn unhex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

/// Go's `unescape`.
fn unescape(s: &str, mode: Encoding) -> Result<String, String> {
    let b = s.as_bytes();
    let mut n = 0;
    let mut has_plus = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                n += 1;
                if i + 2 >= b.len()
                    || !b[i + 1].is_ascii_hexdigit()
                    || !b[i + 2].is_ascii_hexdigit()
                {
                    let rest = &b[i..];
                    let rest = &rest[..rest.len().min(3)];
                    return Err(format!(
                        "invalid URL escape {}",
                        go_quote(&String::from_utf8_lossy(rest))
                    ));
                }
                let esc = &s[i..i + 3];
                if mode == Encoding::Host && unhex(b[i + 1]) < 8 && esc != "%25" {
                    return Err(format!("invalid URL escape {}", go_quote(esc)));
                }
                if mode == Encoding::Zone {
                    let v = (unhex(b[i + 1]) << 4) | unhex(b[i + 2]);
                    if esc != "%25" && v != b' ' && should_escape(v, Encoding::Host) {
                        return Err(format!("invalid URL escape {}", go_quote(esc)));
                    }
                }
                i += 3;
            }
            b'+' => {
                has_plus = mode == Encoding::QueryComponent;
                i += 1;
            }
            c => {
                if matches!(mode, Encoding::Host | Encoding::Zone)
                    && c < 0x80
                    && should_escape(c, mode)
                {
                    return Err(format!(
                        "invalid character {} in host name",
                        go_quote(&s[i..i + 1])
                    ));
                }
                i += 1;
            }
        }
    }
    if n == 0 && !has_plus {
        return Ok(s.to_string());
    }
    let plus = if mode == Encoding::QueryComponent {
        b' '
    } else {
        b'+'
    };
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                out.push((unhex(b[i + 1]) << 4) | unhex(b[i + 2]));
                i += 2;
            }
            b'+' => out.push(plus),
            c => out.push(c),
        }
        i += 1;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `escape`.
fn escape(s: &str, mode: Encoding) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if c == b' ' && mode == Encoding::QueryComponent {
            out.push('+');
        } else if should_escape(c, mode) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

fn valid_optional_port(port: &str) -> bool {
    port.is_empty() || (port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit()))
}

fn valid_userinfo(s: &str) -> bool {
    s.chars().all(|r| {
        r.is_ascii_alphanumeric()
            || matches!(
                r,
                '-' | '.'
                    | '_'
                    | ':'
                    | '~'
                    | '!'
                    | '$'
                    | '&'
                    | '\''
                    | '('
                    | ')'
                    | '*'
                    | '+'
                    | ','
                    | ';'
                    | '='
                    | '%'
                    | '@'
            )
    })
}

/// The parts of Go's `url.URL` the library reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GoUrl {
    pub scheme: String,
    pub opaque: String,
    pub host: String,
    pub path: String,
    pub raw_path: String,
    pub raw_query: String,
    pub fragment: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CelUrl(pub GoUrl);

fn get_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                if i == 0 {
                    return Ok(("", raw));
                }
            }
            b':' => {
                if i == 0 {
                    return Err("missing protocol scheme".into());
                }
                return Ok((&raw[..i], &raw[i + 1..]));
            }
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn parse_host(scheme: &str, host: &str) -> Result<String, String> {
    if let Some(open) = host.rfind('[') {
        if open > 0 {
            return Err("invalid IP-literal".into());
        }
        let Some(close) = host.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let colon_port = &host[close + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
        let colon_port = unescape(colon_port, Encoding::Host)?;
        let hostname = &host[open + 1..close];
        let unescaped = match hostname.find("%25") {
            Some(z) => {
                unescape(&hostname[..z], Encoding::Host)?
                    + &unescape(&hostname[z..], Encoding::Zone)?
            }
            None => unescape(hostname, Encoding::Host)?,
        };
        let addr = parse_addr(&unescaped).map_err(|e| format!("invalid host: {e}"))?;
        if matches!(addr.ip, IpAddr::V4(_)) {
            return Err("invalid IP-literal".into());
        }
        return Ok(format!("[{unescaped}]{colon_port}"));
    }
    if let Some(mut i) = host.find(':') {
        let last = host.rfind(':').unwrap_or(i);
        // Go 1.26's default (urlstrictcolons=1): http and https keep the first colon
        if last != i && scheme != "http" && scheme != "https" {
            i = last;
        }
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
    }
    unescape(host, Encoding::Host)
}

impl GoUrl {
    /// Go's `parse(rawURL, viaRequest)`.
    fn parse_inner(raw: &str, via_request: bool) -> Result<GoUrl, String> {
        if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
            return Err("net/url: invalid control character in URL".into());
        }
        if raw.is_empty() && via_request {
            return Err("empty url".into());
        }
        let mut u = GoUrl::default();
        if raw == "*" {
            u.path = "*".into();
            return Ok(u);
        }
        let (scheme, rest) = get_scheme(raw)?;
        u.scheme = scheme.to_ascii_lowercase();
        let mut rest = rest.to_string();
        if rest.ends_with('?') && rest.matches('?').count() == 1 {
            rest.pop();
        } else if let Some((r, q)) = rest.clone().split_once('?') {
            rest = r.to_string();
            u.raw_query = q.to_string();
        }
        if !rest.starts_with('/') {
            if !u.scheme.is_empty() {
                u.opaque = rest;
                return Ok(u);
            }
            if via_request {
                return Err("invalid URI for request".into());
            }
            let segment = rest.split('/').next().unwrap_or("");
            if segment.contains(':') {
                return Err("first path segment in URL cannot contain colon".into());
            }
        }
        if (!u.scheme.is_empty() || !via_request && !rest.starts_with("///"))
            && rest.starts_with("//")
        {
            let mut authority = rest[2..].to_string();
            rest = String::new();
            if let Some(i) = authority.find('/') {
                rest = authority[i..].to_string();
                authority.truncate(i);
            }
            let host_part = match authority.rfind('@') {
                Some(i) => {
                    let host = parse_host(&u.scheme, &authority[i + 1..])?;
                    let userinfo = &authority[..i];
                    if !valid_userinfo(userinfo) {
                        return Err("net/url: invalid userinfo".into());
                    }
                    match userinfo.split_once(':') {
                        None => {
                            unescape(userinfo, Encoding::UserPassword)?;
                        }
                        Some((user, pass)) => {
                            unescape(user, Encoding::UserPassword)?;
                            unescape(pass, Encoding::UserPassword)?;
                        }
                    }
                    host
                }
                None => parse_host(&u.scheme, &authority)?,
            };
            u.host = host_part;
        }
        let path = unescape(&rest, Encoding::Path)?;
        u.raw_path = if escape(&path, Encoding::Path) == rest {
            String::new()
        } else {
            rest.clone()
        };
        u.path = path;
        Ok(u)
    }

    /// upstream `stringToUrl`: `url.ParseRequestURI` must accept it, and the value is
    /// `url.Parse`'s.
    pub fn parse(raw: &str) -> Result<GoUrl, String> {
        let wrap = |input: &str, e: String| format!("parse {}: {e}", go_quote(input));
        GoUrl::parse_inner(raw, true).map_err(|e| wrap(raw, e))?;
        let (u, frag) = match raw.split_once('#') {
            Some((u, f)) => (u, Some(f)),
            None => (raw, None),
        };
        let mut url = GoUrl::parse_inner(u, false).map_err(|e| wrap(u, e))?;
        if let Some(f) = frag.filter(|f| !f.is_empty()) {
            url.fragment = unescape(f, Encoding::Fragment).map_err(|e| wrap(raw, e))?;
        }
        Ok(url)
    }

    /// `url.ParseRequestURI`'s error for `raw`, None when it accepts it.
    pub fn request_uri_error(raw: &str) -> Option<String> {
        GoUrl::parse_inner(raw, true)
            .err()
            .map(|e| format!("parse {}: {e}", go_quote(raw)))
    }

    /// Whether `url.ParseRequestURI` accepts `raw` (upstream `isURL`).
    pub fn is_request_uri(raw: &str) -> bool {
        GoUrl::parse_inner(raw, true).is_ok()
    }

    /// Go's `splitHostPort` of the host.
    fn split_host_port(&self) -> (&str, &str) {
        let mut host = self.host.as_str();
        let mut port = "";
        if let Some(colon) = host.rfind(':') {
            if valid_optional_port(&host[colon..]) {
                port = &host[colon + 1..];
                host = &host[..colon];
            }
        }
        if host.starts_with('[') && host.ends_with(']') && host.len() >= 2 {
            host = &host[1..host.len() - 1];
        }
        (host, port)
    }

    /// Go's `EscapedPath`.
    pub fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty() && valid_encoded(&self.raw_path) {
            if let Ok(p) = unescape(&self.raw_path, Encoding::Path) {
                if p == self.path {
                    return self.raw_path.clone();
                }
            }
        }
        if self.path == "*" {
            return "*".into();
        }
        escape(&self.path, Encoding::Path)
    }

    /// Go's `Query()`: `ParseQuery` with its errors dropped.
    pub fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        if self.raw_query.matches('&').count() + 1 > 10_000 {
            return out;
        }
        for key in self.raw_query.split('&') {
            if key.contains(';') || key.is_empty() {
                continue;
            }
            let (k, v) = key.split_once('=').unwrap_or((key, ""));
            let (Ok(k), Ok(v)) = (
                unescape(k, Encoding::QueryComponent),
                unescape(v, Encoding::QueryComponent),
            ) else {
                continue;
            };
            match out.iter_mut().find(|(x, _)| *x == k) {
                Some((_, vs)) => vs.push(v),
                None => out.push((k, vec![v])),
            }
        }
        out
    }
}

fn valid_encoded(s: &str) -> bool {
    s.bytes().all(|c| {
        matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'['
                | b']'
                | b'%'
        ) || !should_escape(c, Encoding::Path)
    })
}

fn string_to_url(s: &CelString<'_>) -> Result<CelUrl, ExecutionError> {
    GoUrl::parse(s.inner()).map(CelUrl).map_err(|e| {
        fn_err(
            "url",
            format!("URL parse error during conversion from string: {e}"),
        )
    })
}
fn is_url(s: &CelString<'_>) -> CelBool {
    CelBool::from(GoUrl::is_request_uri(s.inner()))
}
fn url_scheme(u: &CelUrl) -> CelString<'static> {
    CelString::from(u.0.scheme.clone())
}
fn url_host(u: &CelUrl) -> CelString<'static> {
    CelString::from(u.0.host.clone())
}
fn url_hostname(u: &CelUrl) -> CelString<'static> {
    CelString::from(u.0.split_host_port().0.to_string())
}
fn url_port(u: &CelUrl) -> CelString<'static> {
    CelString::from(u.0.split_host_port().1.to_string())
}
fn url_escaped_path(u: &CelUrl) -> CelString<'static> {
    CelString::from(u.0.escaped_path())
}
fn url_query(u: &CelUrl) -> CelMap<'static> {
    let m: HashMap<CelMapKey<'static>, Box<dyn Val>> =
        u.0.query()
            .into_iter()
            .map(|(k, vs)| {
                let list: Vec<Box<dyn Val>> = vs
                    .into_iter()
                    .map(|v| Box::new(CelString::from(v)) as Box<dyn Val>)
                    .collect();
                (
                    CelMapKey::from(k),
                    Box::new(CelList::from(list)) as Box<dyn Val>,
                )
            })
            .collect();
    CelMap::from(m)
}

// ---- Kubernetes' lists library ------------------------------------------------------------

fn compare(a: &dyn Val, b: &dyn Val) -> Result<Ordering, ExecutionError> {
    a.as_comparer()
        .ok_or_else(|| {
            ExecutionError::no_such_overload("compare", vec![a.get_type().name().to_owned()])
        })?
        .compare(b)
}

fn one<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let n = args.len();
    args.into_iter()
        .next()
        .filter(|_| n == 1)
        .ok_or_else(|| ExecutionError::invalid_argument_count(1, n))
}

fn list_is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let list = one(args)?;
    let items = list_items(list.as_ref())?;
    for w in items.windows(2) {
        if compare(w[0], w[1])? == Ordering::Greater {
            return Ok(CowVal::owned(CelBool::from(false)));
        }
    }
    Ok(CowVal::owned(CelBool::from(true)))
}

fn list_sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let list = one(args)?;
    let items = list_items(list.as_ref())?;
    let Some((first, rest)) = items.split_first() else {
        return Ok(CowVal::owned(CelInt::from(0)));
    };
    let mut acc: Box<dyn Val + 'v> = first.clone_as_boxed();
    for x in rest {
        let next = acc
            .as_adder()
            .ok_or_else(|| {
                ExecutionError::no_such_overload("sum", vec![acc.get_type().name().to_owned()])
            })?
            .add(*x)?
            .into_owned();
        acc = next;
    }
    Ok(CowVal::Owned(acc))
}

fn extreme<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    name: &str,
    prefer: Ordering,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let list = one(args)?;
    let items = list_items(list.as_ref())?;
    let mut best: Option<&(dyn Val + 'v)> = None;
    for x in items {
        best = match best {
            None => Some(x),
            Some(b) if compare(b, x)? == prefer => Some(x),
            keep => keep,
        };
    }
    match best {
        Some(b) => Ok(CowVal::Owned(b.clone_as_boxed())),
        None => Err(ExecutionError::function_error(
            name,
            format!("{name} called on empty list"),
        )),
    }
}

fn list_min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "min", Ordering::Greater)
}

fn list_max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "max", Ordering::Less)
}

fn two<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<(CowVal<'b, 'v>, CowVal<'b, 'v>), ExecutionError> {
    let n = args.len();
    let mut it = args.into_iter();
    match (it.next(), it.next(), it.next()) {
        (Some(a), Some(b), None) => Ok((a, b)),
        _ => Err(ExecutionError::invalid_argument_count(2, n)),
    }
}

fn list_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, item) = two(args)?;
    let items = list_items(list.as_ref())?;
    let i = items.iter().position(|x| x.equals(item.as_ref()));
    Ok(CowVal::owned(CelInt::from(i.map_or(-1, |i| i as i64))))
}

fn list_last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, item) = two(args)?;
    let items = list_items(list.as_ref())?;
    let i = items.iter().rposition(|x| x.equals(item.as_ref()));
    Ok(CowVal::owned(CelInt::from(i.map_or(-1, |i| i as i64))))
}

/// Registers the lists, IP, CIDR and URL libraries.
pub fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    env.add_type(IP_TYPE.to_owned())?;
    env.add_type(CIDR_TYPE.to_owned())?;
    env.add_type(URL_TYPE.to_owned())?;
    // lists
    env.add_member_overload(
        "isSorted",
        "list_is_sorted_bool",
        LIST_TYPE,
        vec![],
        list_is_sorted,
    )?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], list_sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], list_min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], list_max)?;
    env.add_member_overload(
        "indexOf",
        "list_a_index_of_int",
        LIST_TYPE,
        vec![DYN_TYPE],
        list_index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_a_last_index_of_int",
        LIST_TYPE,
        vec![DYN_TYPE],
        list_last_index_of,
    )?;
    // IP
    cel::add_overload!(env, fn string_to_ip: (CelString) -> Result<CelIp>, name = "ip")?;
    cel::add_overload!(env, fn is_ip: (CelString) -> CelBool, name = "isIP")?;
    cel::add_overload!(env, fn ip_is_canonical: (CelString) -> Result<CelBool>, name = "ip.isCanonical")?;
    cel::add_overload!(env, fn ip_to_string: (CelIp) -> CelString, name = "string")?;
    cel::add_member_overload!(env, fn ip_family: (CelIp) -> CelInt, name = "family")?;
    cel::add_member_overload!(env, fn ip_is_unspecified: (CelIp) -> CelBool, name = "isUnspecified")?;
    cel::add_member_overload!(env, fn ip_is_loopback: (CelIp) -> CelBool, name = "isLoopback")?;
    cel::add_member_overload!(env, fn ip_is_link_local_multicast: (CelIp) -> CelBool, name = "isLinkLocalMulticast")?;
    cel::add_member_overload!(env, fn ip_is_link_local_unicast: (CelIp) -> CelBool, name = "isLinkLocalUnicast")?;
    cel::add_member_overload!(env, fn ip_is_global_unicast: (CelIp) -> CelBool, name = "isGlobalUnicast")?;
    // CIDR
    cel::add_overload!(env, fn string_to_cidr: (CelString) -> Result<CelCidr>, name = "cidr")?;
    cel::add_overload!(env, fn is_cidr: (CelString) -> CelBool, name = "isCIDR")?;
    cel::add_overload!(env, fn cidr_to_string: (CelCidr) -> CelString, name = "string")?;
    cel::add_member_overload!(env, fn cidr_contains_ip: (CelCidr, CelIp) -> CelBool, name = "containsIP")?;
    cel::add_member_overload!(env, fn cidr_contains_ip_string: (CelCidr, CelString) -> Result<CelBool>, name = "containsIP")?;
    cel::add_member_overload!(env, fn cidr_contains_cidr: (CelCidr, CelCidr) -> CelBool, name = "containsCIDR")?;
    cel::add_member_overload!(env, fn cidr_contains_cidr_string: (CelCidr, CelString) -> Result<CelBool>, name = "containsCIDR")?;
    cel::add_member_overload!(env, fn cidr_ip: (CelCidr) -> CelIp, name = "ip")?;
    cel::add_member_overload!(env, fn cidr_prefix_length: (CelCidr) -> CelInt, name = "prefixLength")?;
    cel::add_member_overload!(env, fn cidr_masked: (CelCidr) -> CelCidr, name = "masked")?;
    // URL
    cel::add_overload!(env, fn string_to_url: (CelString) -> Result<CelUrl>, name = "url")?;
    cel::add_overload!(env, fn is_url: (CelString) -> CelBool, name = "isURL")?;
    cel::add_member_overload!(env, fn url_scheme: (CelUrl) -> CelString, name = "getScheme")?;
    cel::add_member_overload!(env, fn url_host: (CelUrl) -> CelString, name = "getHost")?;
    cel::add_member_overload!(env, fn url_hostname: (CelUrl) -> CelString, name = "getHostname")?;
    cel::add_member_overload!(env, fn url_port: (CelUrl) -> CelString, name = "getPort")?;
    cel::add_member_overload!(env, fn url_escaped_path: (CelUrl) -> CelString, name = "getEscapedPath")?;
    cel::add_member_overload!(env, fn url_query: (CelUrl) -> CelMap, name = "getQuery")?;
    Ok(())
}

// ---- Kubernetes' runtime cost estimator ---------------------------------------------------

fn ceil_tenth(n: u64, factor: f64) -> u64 {
    (n as f64 * factor).ceil() as u64
}

/// Kubernetes' `traversalCost`: a string's bytes / 10 (rounded down), a list's or map's
/// elements' (and keys') costs summed, 1 for anything else.
fn traversal_cost(v: &dyn Val) -> u64 {
    if let Some(s) = v.downcast_ref::<CelString>() {
        return (s.inner().len() as f64 * 0.1) as u64;
    }
    match v.get_type().kind() {
        Kind::List => {
            list_items(v).map_or(1, |items| items.iter().map(|x| traversal_cost(*x)).sum())
        }
        Kind::Map => {
            let Some(it) = v.as_iterable() else { return 1 };
            let Some(ix) = v.as_indexer() else { return 1 };
            let mut total = 0;
            let mut keys = it.iter();
            while let Some(k) = keys.next() {
                total += traversal_cost(k);
                if let Ok(val) = ix.get(k) {
                    total += traversal_cost(val.as_ref());
                }
            }
            total
        }
        _ => 1,
    }
}

fn is_kubernetes_value(v: &dyn Val) -> bool {
    let t = v.get_type().name();
    matches!(
        t,
        "kubernetes.Quantity"
            | "kubernetes.Semver"
            | "kubernetes.URL"
            | "kubernetes.NamedFormat"
            | "net.IP"
            | "net.CIDR"
    )
}

/// Kubernetes' `library.CostEstimator.CallCost` for the functions a device selector can
/// call (`args` has a member call's target first); `None` leaves the call to cel-go's
/// defaults. `join`'s cost is its result's: asked first without it, `None` then.
pub fn call_cost(function: &str, args: &[&dyn Val], result: Option<&dyn Val>) -> Option<u64> {
    use cel::cost::actual_size as size;
    if let Some(cost) = super::celformat::call_cost(function, args) {
        return Some(cost);
    }
    let first = args.first().copied();
    match function {
        "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
            Some(first.map_or(0, traversal_cost))
        }
        "url" | "lowerAscii" | "upperAscii" | "substring" | "trim" => {
            first.map(|a| ceil_tenth(size(a), 0.1))
        }
        "replace" | "split" => first.map(|a| ceil_tenth(size(a), 0.2)),
        "join" => result.map(|r| ceil_tenth(size(r), 0.2)),
        "find" | "findAll" if args.len() >= 2 => {
            let s = ((1.0 + size(args[0]) as f64) * 0.1).ceil() as u64;
            Some(s * ceil_tenth(size(args[1]), 0.25))
        }
        "cidr" | "isIP" | "isCIDR" => first.map(|a| ceil_tenth(size(a), 0.1)),
        "ip" => first.map(|a| {
            if a.downcast_ref::<CelCidr>().is_some() {
                1
            } else {
                ceil_tenth(size(a), 0.1)
            }
        }),
        "ip.isCanonical" => first.map(|a| ceil_tenth(size(a), 0.2)),
        "masked"
        | "prefixLength"
        | "family"
        | "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast" => Some(1),
        "containsIP" if args.len() >= 2 => {
            let cidr = size(args[0]);
            let mut cost = ceil_tenth(cidr + cidr, 0.1);
            if args[1].downcast_ref::<CelString>().is_some() {
                cost += ceil_tenth(size(args[1]), 0.1);
            }
            Some(cost)
        }
        "containsCIDR" if args.len() >= 2 => {
            let cidr = size(args[0]);
            let mut cost = ceil_tenth(cidr + cidr, 0.1) + ceil_tenth(cidr, 0.1) + 1;
            if args[1].downcast_ref::<CelString>().is_some() {
                cost += ceil_tenth(size(args[1]), 0.1);
            }
            Some(cost)
        }
        "quantity" | "isQuantity" | "semver" | "isSemver" => {
            first.map(|a| ceil_tenth(size(a), 0.1))
        }
        "sign" | "asInteger" | "isInteger" | "asApproximateFloat" | "isGreaterThan"
        | "isLessThan" | "compareTo" | "add" | "sub" | "major" | "minor" | "patch" => Some(1),
        "getScheme" | "getHostname" | "getHost" | "getPort" | "getEscapedPath" | "getQuery" => {
            Some(1)
        }
        "_==_" if args.len() == 2 && is_kubernetes_value(args[0]) => Some(1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_addr_parser_messages() {
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("192.168.0.1", Ok("192.168.0.1")),
            ("::1", Ok("::1")),
            ("2001:db8::68", Ok("2001:db8::68")),
            ("2001:0db8:0:0:0:0:0:68", Ok("2001:db8::68")),
            ("1:0:0:1:0:0:0:1", Ok("1:0:0:1::1")),
            ("x", Err("ParseAddr(\"x\"): unable to parse IP")),
            ("01.1.1.1", Err("ParseAddr(\"01.1.1.1\"): IPv4 field has octet with leading zero")),
            ("256.1.1.1", Err("ParseAddr(\"256.1.1.1\"): IPv4 field has value >255")),
            ("1.1.1", Err("ParseAddr(\"1.1.1\"): IPv4 address too short")),
            ("1.1.1.1.1", Err("ParseAddr(\"1.1.1.1.1\"): IPv4 address too long")),
            ("1..1.1", Err("ParseAddr(\"1..1.1\"): IPv4 field must have at least one digit (at \".1.1\")")),
            ("1.a.1.1", Err("ParseAddr(\"1.a.1.1\"): unexpected character (at \"a.1.1\")")),
            ("%eth0", Err("ParseAddr(\"%eth0\"): missing IPv6 address")),
            ("fe80::1%", Err("ParseAddr(\"fe80::1%\"): zone must be a non-empty string")),
            ("1::2::3", Err("ParseAddr(\"1::2::3\"): multiple :: in address (at \":3\")")),
            ("12345::", Err("ParseAddr(\"12345::\"): each group must have 4 or less digits (at \"12345::\")")),
            ("1:2:3", Err("ParseAddr(\"1:2:3\"): address string too short")),
        ];
        for (input, want) in cases {
            let got = parse_addr(input).map(|a| addr_string(&a.ip));
            assert_eq!(got.as_deref().map_err(String::as_str), *want, "{input}");
        }
        assert_eq!(parse_addr("fe80::1%eth0").unwrap().zone, "eth0");
        assert!(is_4in6(&parse_addr("::ffff:1.2.3.4").unwrap().ip));
    }

    #[test]
    fn go_prefix_parser_messages() {
        type Want = Result<(&'static str, u8), &'static str>;
        let cases: &[(&str, Want)] = &[
            ("10.0.0.0/8", Ok(("10.0.0.0", 8))),
            ("10.1.2.3/8", Ok(("10.1.2.3", 8))),
            ("2001:db8::/32", Ok(("2001:db8::", 32))),
            ("10.0.0.0", Err("netip.ParsePrefix(\"10.0.0.0\"): no '/'")),
            ("10.0.0.0/33", Err("netip.ParsePrefix(\"10.0.0.0/33\"): prefix length out of range")),
            ("10.0.0.0/08", Err("netip.ParsePrefix(\"10.0.0.0/08\"): bad bits after slash: \"08\"")),
            ("10.0.0.0/", Err("netip.ParsePrefix(\"10.0.0.0/\"): bad bits after slash: \"\"")),
            ("fe80::1%eth0/64", Err("netip.ParsePrefix(\"fe80::1%eth0/64\"): IPv6 zones cannot be present in a prefix")),
            ("x/8", Err("netip.ParsePrefix(\"x/8\"): ParseAddr(\"x\"): unable to parse IP")),
        ];
        for (input, want) in cases {
            let got = parse_prefix(input).map(|(a, b)| (addr_string(&a), b));
            let got = got
                .as_ref()
                .map(|(a, b)| (a.as_str(), *b))
                .map_err(String::as_str);
            assert_eq!(got, *want, "{input}");
        }
    }

    #[test]
    fn go_url_parser() {
        // (input, scheme, host, hostname, port, escaped path, query) or the error
        type Parts = (
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            &'static str,
        );
        let cases: &[(&str, Result<Parts, &str>)] = &[
            (
                "https://example.com",
                Ok(("https", "example.com", "example.com", "", "")),
            ),
            (
                "https://example.com:80/",
                Ok(("https", "example.com:80", "example.com", "80", "/")),
            ),
            (
                "https://[::1]:80/path",
                Ok(("https", "[::1]:80", "::1", "80", "/path")),
            ),
            (
                "HTTPS://Example.com/a%20b",
                Ok(("https", "Example.com", "Example.com", "", "/a%20b")),
            ),
            ("/absolute-path", Ok(("", "", "", "", "/absolute-path"))),
            (
                "https://example.com/path with spaces",
                Ok((
                    "https",
                    "example.com",
                    "example.com",
                    "",
                    "/path%20with%20spaces",
                )),
            ),
            (
                "../relative-path",
                Err("parse \"../relative-path\": invalid URI for request"),
            ),
            ("", Err("parse \"\": empty url")),
            (
                "https://example.com:abc/",
                Err("parse \"https://example.com:abc/\": invalid port \":abc\" after host"),
            ),
            (
                "https://ex%zzample.com",
                Err("parse \"https://ex%zzample.com\": invalid URL escape \"%zz\""),
            ),
            (":foo", Err("parse \":foo\": missing protocol scheme")),
        ];
        for (input, want) in cases {
            let got = GoUrl::parse(input).map(|u| {
                let (hn, p) = u.split_host_port();
                (
                    u.scheme.clone(),
                    u.host.clone(),
                    hn.to_string(),
                    p.to_string(),
                    u.escaped_path(),
                )
            });
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(
                    (
                        g.0.as_str(),
                        g.1.as_str(),
                        g.2.as_str(),
                        g.3.as_str(),
                        g.4.as_str()
                    ),
                    *w,
                    "{input}"
                ),
                (Err(g), Err(w)) => assert_eq!(g, *w, "{input}"),
                (g, w) => panic!("{input}: got {g:?}, want {w:?}"),
            }
        }
        let u = GoUrl::parse("https://example.com/?k=v&k=w&x=%20y").unwrap();
        assert_eq!(
            u.query(),
            vec![
                ("k".to_string(), vec!["v".to_string(), "w".to_string()]),
                ("x".to_string(), vec![" y".to_string()])
            ]
        );
    }
}
