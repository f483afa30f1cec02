//! Kubernetes resource quantities (`resource.Quantity`) as the DRA allocator needs them:
//! exact comparison, addition and subtraction of device capacities and counters.
//!
//! A quantity is held as an `i128` count of nano-units (ceiling-rounded below 1n, as
//! `resource.Quantity` rounds), which represents every value the API accepts (up to
//! 2^63 Ei) exactly, plus the text it was written with so that copies of API values go
//! back to the API unchanged. Values computed here (a capacity rounded up to a request
//! policy's step) are formatted as upstream's `NewQuantity(v, BinarySI)` canonical form.
//! Hand-written: the grammar is small and fixed, and the allocator compares counters on
//! every candidate device, so parsing once into an integer matters.

use std::cmp::Ordering;
use std::fmt;

const NANO: i128 = 1_000_000_000;

#[derive(Clone, Debug)]
pub struct Quantity {
    /// The value in nano-units.
    pub nanos: i128,
    /// The text to send back to the API.
    pub text: String,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}
impl Eq for Quantity {}
impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn pow10(n: u32) -> i128 {
    10i128.pow(n)
}

impl Quantity {
    pub fn zero() -> Quantity {
        Quantity {
            nanos: 0,
            text: "0".to_string(),
        }
    }

    /// Parse `text` as `resource.MustParse` would; the error names what is wrong.
    pub fn parse(text: &str) -> Result<Quantity, String> {
        let nanos = parse_nanos(text.trim())
            .ok_or_else(|| format!("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (got {text:?})"))?;
        Ok(Quantity {
            nanos,
            text: text.trim().to_string(),
        })
    }

    /// `resource.ParseQuantity` step by step (no trimming, its three errors word for
    /// word, BinarySI values capped at 2^63-1, anything else rounded up to a nano-unit
    /// away from zero): the value in nano-units, as an `i128` when it fits
    /// ([`GoQuantity::Nanos`]) or as decimal digits ([`GoQuantity::Big`]: upstream's
    /// `inf.Dec` holds any magnitude).
    pub fn parse_go(text: &str) -> Result<GoQuantity, &'static str> {
        parse_go(text)
    }
}

/// `resource.ErrFormatWrong`, `ErrNumeric`, `ErrSuffix`.
pub const ERR_FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
pub const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";
pub const ERR_SUFFIX: &str = "unable to parse quantity's suffix";

/// A value `resource.ParseQuantity` accepted, in nano-units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GoQuantity {
    Nanos(i128),
    /// Beyond `i128`: the sign and the decimal digits of the magnitude (no leading
    /// zeros).
    Big {
        negative: bool,
        digits: String,
    },
}

impl GoQuantity {
    /// The sign and the magnitude's decimal digits ("" for zero).
    fn signed_digits(&self) -> (bool, String) {
        match self {
            GoQuantity::Nanos(v) => {
                let d = v.unsigned_abs().to_string();
                (*v < 0, if d == "0" { String::new() } else { d })
            }
            GoQuantity::Big { negative, digits } => (*negative, digits.clone()),
        }
    }

    pub fn sign(&self) -> Ordering {
        let (negative, digits) = self.signed_digits();
        match (digits.is_empty(), negative) {
            (true, _) => Ordering::Equal,
            (false, true) => Ordering::Less,
            (false, false) => Ordering::Greater,
        }
    }

    pub fn cmp_value(&self, other: &GoQuantity) -> Ordering {
        if let (GoQuantity::Nanos(a), GoQuantity::Nanos(b)) = (self, other) {
            return a.cmp(b);
        }
        let (an, ad) = self.signed_digits();
        let (bn, bd) = other.signed_digits();
        let (sa, sb) = (self.sign(), other.sign());
        if sa != sb {
            return sa.cmp(&sb);
        }
        let magnitude = cmp_digits(&ad, &bd);
        debug_assert_eq!(an, bn);
        if an {
            magnitude.reverse()
        } else {
            magnitude
        }
    }

    pub fn add(&self, other: &GoQuantity) -> GoQuantity {
        if let (GoQuantity::Nanos(a), GoQuantity::Nanos(b)) = (self, other) {
            if let Some(v) = a.checked_add(*b) {
                return GoQuantity::Nanos(v);
            }
        }
        let (an, ad) = self.signed_digits();
        let (bn, bd) = other.signed_digits();
        if an == bn {
            return go_quantity(an, add_digits(&ad, &bd));
        }
        match cmp_digits(&ad, &bd) {
            Ordering::Equal => GoQuantity::Nanos(0),
            Ordering::Greater => go_quantity(an, sub_digits(&ad, &bd)),
            Ordering::Less => go_quantity(bn, sub_digits(&bd, &ad)),
        }
    }

    pub fn neg(&self) -> GoQuantity {
        match self {
            GoQuantity::Nanos(v) => match v.checked_neg() {
                Some(n) => GoQuantity::Nanos(n),
                None => GoQuantity::Big {
                    negative: false,
                    digits: v.unsigned_abs().to_string(),
                },
            },
            GoQuantity::Big { negative, digits } => go_quantity(!negative, digits.clone()),
        }
    }

    pub fn sub(&self, other: &GoQuantity) -> GoQuantity {
        self.add(&other.neg())
    }

    /// The value when it is a whole number of units that fits an int64.
    pub fn as_i64_units(&self) -> Option<i64> {
        match self {
            GoQuantity::Nanos(v) if v % NANO == 0 => i64::try_from(v / NANO).ok(),
            _ => None,
        }
    }

    /// The value as a float (upstream's `AsApproximateFloat64`).
    pub fn as_f64(&self) -> f64 {
        match self {
            GoQuantity::Nanos(v) => *v as f64 / 1e9,
            GoQuantity::Big { negative, digits } => {
                let m: f64 = digits.parse().unwrap_or(f64::INFINITY);
                let v = m * 1e-9;
                if *negative {
                    -v
                } else {
                    v
                }
            }
        }
    }
}

fn add_digits(a: &str, b: &str) -> String {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut out = Vec::with_capacity(a.len().max(b.len()) + 1);
    let (mut i, mut j, mut carry) = (a.len(), b.len(), 0u8);
    while i > 0 || j > 0 || carry > 0 {
        let mut v = carry;
        if i > 0 {
            i -= 1;
            v += a[i] - b'0';
        }
        if j > 0 {
            j -= 1;
            v += b[j] - b'0';
        }
        out.push(b'0' + v % 10);
        carry = v / 10;
    }
    out.reverse();
    String::from_utf8(out).expect("ascii digits")
}

/// `a - b` for magnitudes with `a > b`.
fn sub_digits(a: &str, b: &str) -> String {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut out = Vec::with_capacity(a.len());
    let (mut i, mut j, mut borrow) = (a.len(), b.len(), 0i8);
    while i > 0 {
        i -= 1;
        let mut v = (a[i] - b'0') as i8 - borrow;
        if j > 0 {
            j -= 1;
            v -= (b[j] - b'0') as i8;
        }
        borrow = if v < 0 { 1 } else { 0 };
        if v < 0 {
            v += 10;
        }
        out.push(b'0' + v as u8);
    }
    out.reverse();
    let s = String::from_utf8(out).expect("ascii digits");
    s.trim_start_matches('0').to_string()
}

/// Go's `parseQuantityString`: (positive, value, num, denom, suffix).
fn parse_quantity_string(s: &str) -> Result<(bool, &str, &str, &str, &str), &'static str> {
    let b = s.as_bytes();
    let end = b.len();
    let mut positive = true;
    let mut pos = 0;
    if pos < end {
        match b[0] {
            b'-' => {
                positive = false;
                pos += 1;
            }
            b'+' => pos += 1,
            _ => {}
        }
    }
    // leading zeros
    loop {
        if pos >= end {
            return Ok((positive, "0", "0", "", ""));
        }
        if b[pos] == b'0' {
            pos += 1;
        } else {
            break;
        }
    }
    let num_start = pos;
    let mut i = pos;
    while i < end && b[i].is_ascii_digit() {
        i += 1;
    }
    if i >= end {
        return Ok((positive, s, &s[num_start..], "", ""));
    }
    let mut num = &s[num_start..i];
    pos = i;
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if pos < end && b[pos] == b'.' {
        pos += 1;
        let start = pos;
        let mut i = pos;
        while i < end && b[i].is_ascii_digit() {
            i += 1;
        }
        if i >= end {
            return Ok((positive, s, num, &s[start..], ""));
        }
        denom = &s[start..i];
        pos = i;
    }
    let value = &s[..pos];
    let suffix_start = pos;
    let mut i = pos;
    while i < end && b"eEinumkKMGTP".contains(&b[i]) {
        i += 1;
    }
    if i >= end {
        return Ok((positive, value, num, denom, &s[suffix_start..]));
    }
    pos = i;
    if b[pos] == b'-' || b[pos] == b'+' {
        pos += 1;
    }
    let mut i = pos;
    while i < end && b[i].is_ascii_digit() {
        i += 1;
    }
    if i >= end {
        return Ok((positive, value, num, denom, &s[suffix_start..]));
    }
    Err(ERR_FORMAT_WRONG)
}

/// The suffixer's `interpret`: (base, exponent, BinarySI).
fn interpret_suffix(suffix: &str) -> Option<(u32, i64, bool)> {
    let dec = |e| Some((10, e, false));
    match suffix {
        "" => dec(0),
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => Some((2, 10, true)),
        "Mi" => Some((2, 20, true)),
        "Gi" => Some((2, 30, true)),
        "Ti" => Some((2, 40, true)),
        "Pi" => Some((2, 50, true)),
        "Ei" => Some((2, 60, true)),
        _ if suffix.len() > 1 && (suffix.starts_with('e') || suffix.starts_with('E')) => {
            // strconv.ParseInt(s[1:], 10, 64), then int32(parsed).
            let parsed: i64 = suffix[1..].parse().ok()?;
            dec(i64::from(parsed as i32))
        }
        _ => None,
    }
}

/// Decimal digits times 10^exp (exp ≥ 0) or divided by 10^-exp rounded up (the
/// magnitude; `inf.RoundUp`).
fn scale_digits(digits: &str, exp: i64) -> String {
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return String::new();
    }
    if exp >= 0 {
        return format!("{digits}{}", "0".repeat(exp as usize));
    }
    let cut = (-exp) as usize;
    if cut >= digits.len() {
        return "1".to_string(); // a non-zero value below one nano-unit rounds up to 1n
    }
    let (keep, dropped) = digits.split_at(digits.len() - cut);
    if dropped.bytes().all(|b| b == b'0') {
        keep.to_string()
    } else {
        add_one(keep)
    }
}

fn add_one(digits: &str) -> String {
    let mut out: Vec<u8> = digits.bytes().collect();
    let mut i = out.len();
    loop {
        if i == 0 {
            out.insert(0, b'1');
            break;
        }
        i -= 1;
        if out[i] == b'9' {
            out[i] = b'0';
        } else {
            out[i] += 1;
            break;
        }
    }
    String::from_utf8(out).expect("ascii digits")
}

fn mul_small(digits: &str, m: u32) -> String {
    let mut out = Vec::with_capacity(digits.len() + 10);
    let mut carry: u64 = 0;
    for b in digits.bytes().rev() {
        let v = u64::from(b - b'0') * u64::from(m) + carry;
        out.push(b'0' + (v % 10) as u8);
        carry = v / 10;
    }
    while carry > 0 {
        out.push(b'0' + (carry % 10) as u8);
        carry /= 10;
    }
    out.reverse();
    let s = String::from_utf8(out).expect("ascii digits");
    s.trim_start_matches('0').to_string()
}

fn cmp_digits(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn go_quantity(negative: bool, digits: String) -> GoQuantity {
    let digits = digits.trim_start_matches('0').to_string();
    match digits.parse::<i128>() {
        Ok(v) => GoQuantity::Nanos(if negative { -v } else { v }),
        Err(_) if digits.is_empty() => GoQuantity::Nanos(0),
        Err(_) => GoQuantity::Big { negative, digits },
    }
}

fn parse_go(s: &str) -> Result<GoQuantity, &'static str> {
    if s.is_empty() {
        return Err(ERR_FORMAT_WRONG);
    }
    if s == "0" {
        return Ok(GoQuantity::Nanos(0));
    }
    let (positive, value, num, denom, suffix) = parse_quantity_string(s)?;
    let (base, exponent, binary) = interpret_suffix(suffix).ok_or(ERR_SUFFIX)?;
    // The fast path (int64Amount): exact, no rounding.
    let (mut scale, precision, mantissa): (i64, i64, i64) = if !binary {
        (exponent, 18 - (num.len() + denom.len()) as i64, 1)
    } else if exponent >= 0 && denom.is_empty() {
        let precision = 15 - num.len() as i64 - ((exponent as f32) * 3.0 / 10.0) as i64 - 1;
        (0, precision, 1i64 << exponent)
    } else {
        (0, -1, 1)
    };
    if precision >= 0 {
        scale -= denom.len() as i64;
        if scale >= -9 {
            let shifted = format!("{num}{denom}");
            let v: i64 = shifted.parse().map_err(|_| ERR_NUMERIC)?;
            if let Some(result) = v.checked_mul(mantissa) {
                let digits = scale_digits(&result.to_string(), scale + 9);
                return Ok(go_quantity(!positive, digits));
            }
        }
    }
    // The slow path (inf.Dec): the value's digits and scale, the suffix applied, the
    // magnitude rounded up to a nano-unit, BinarySI capped.
    let body = value.trim_start_matches(['+', '-']);
    if !body.bytes().any(|b| b.is_ascii_digit()) || body.matches('.').count() > 1 {
        return Err(ERR_NUMERIC);
    }
    let (int_part, frac_part) = body.split_once('.').unwrap_or((body, ""));
    let mut digits = format!("{int_part}{frac_part}");
    let mut exp10 = -(frac_part.len() as i64);
    if base == 10 {
        exp10 += exponent;
    } else {
        for _ in 0..exponent {
            digits = mul_small(&digits, 2);
        }
    }
    let mut nanos = scale_digits(&digits, exp10 + 9);
    if binary {
        let max = format!("{}000000000", i64::MAX);
        if cmp_digits(&nanos, &max) == Ordering::Greater {
            nanos = max;
        }
    }
    Ok(go_quantity(!positive, nanos))
}

impl Quantity {
    /// A quantity computed here, formatted in the BinarySI canonical form.
    pub fn from_nanos(nanos: i128) -> Quantity {
        Quantity {
            nanos,
            text: format_binary(nanos),
        }
    }

    /// Upstream `Quantity.Value()`: the value rounded up to an integer.
    pub fn value(&self) -> i128 {
        let q = self.nanos.div_euclid(NANO);
        if self.nanos.rem_euclid(NANO) != 0 {
            q + 1
        } else {
            q
        }
    }

    pub fn is_integer(&self) -> bool {
        self.nanos % NANO == 0
    }

    pub fn add(&self, other: &Quantity) -> Quantity {
        Quantity::from_nanos(self.nanos + other.nanos)
    }

    pub fn sub(&self, other: &Quantity) -> Quantity {
        Quantity::from_nanos(self.nanos - other.nanos)
    }
}

fn parse_nanos(s: &str) -> Option<i128> {
    if s.is_empty() {
        return None;
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut negative = false;
    if bytes[0] == b'+' || bytes[0] == b'-' {
        negative = bytes[0] == b'-';
        i = 1;
    }
    let num_start = i;
    while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
        i += 1;
    }
    let number = &s[num_start..i];
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return None;
    }
    let suffix = &s[i..];
    let (int_part, frac_part) = match number.split_once('.') {
        Some((a, b)) => (a, b),
        None => (number, ""),
    };
    // mantissa = int_part.frac_part as an integer scaled by 10^-len(frac)
    let digits = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    if digits.len() > 36 {
        return None;
    }
    let mantissa: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let frac_len = frac_part.len() as i32;
    // value = mantissa * 10^-frac_len * multiplier
    let (base2, exp10): (u32, i32) = match suffix {
        "" => (0, 0),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        _ => {
            let rest = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))?;
            let e: i32 = rest.parse().ok()?;
            if !(-40..=40).contains(&e) {
                return None;
            }
            (0, e)
        }
    };
    // nanos = mantissa * 2^base2 * 10^(exp10 - frac_len + 9), rounded up.
    let mut value = mantissa.checked_mul(1i128.checked_shl(base2)?)?;
    let scale = exp10 - frac_len + 9;
    if scale >= 0 {
        value = value.checked_mul(pow10(scale as u32))?;
    } else {
        let d = pow10((-scale) as u32);
        let q = value / d;
        value = if value % d != 0 { q + 1 } else { q };
    }
    Some(if negative { -value } else { value })
}

/// `resource.NewQuantity(v, BinarySI).String()` for a value computed in nano-units.
fn format_binary(nanos: i128) -> String {
    if nanos % NANO != 0 {
        // Not an integer: upstream falls back to decimal notation.
        return format_decimal(nanos);
    }
    let v = nanos / NANO;
    if v == 0 {
        return "0".to_string();
    }
    let suffixes = [
        (60, "Ei"),
        (50, "Pi"),
        (40, "Ti"),
        (30, "Gi"),
        (20, "Mi"),
        (10, "Ki"),
    ];
    let abs = v.unsigned_abs();
    for (shift, suffix) in suffixes {
        let unit = 1u128 << shift;
        if abs >= unit && abs % unit == 0 {
            return format!("{}{}", v / (unit as i128), suffix);
        }
    }
    v.to_string()
}

fn format_decimal(nanos: i128) -> String {
    for (scale, suffix) in [(NANO, ""), (1_000_000, "m"), (1_000, "u"), (1, "n")] {
        if nanos % scale == 0 {
            return format!("{}{}", nanos / scale, suffix);
        }
    }
    format!("{nanos}n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_suffixes() {
        let cases = [
            ("1", NANO),
            ("1Gi", (1i128 << 30) * NANO),
            ("1.5Gi", (3i128 << 29) * NANO),
            ("100m", NANO / 10),
            ("1k", 1000 * NANO),
            ("1e3", 1000 * NANO),
            ("-2", -2 * NANO),
            ("0.1n", 1),
            ("80Gi", (80i128 << 30) * NANO),
        ];
        for (text, want) in cases {
            assert_eq!(Quantity::parse(text).unwrap().nanos, want, "{text}");
        }
        assert!(Quantity::parse("1X").is_err());
        assert!(Quantity::parse("").is_err());
    }

    #[test]
    fn parses_as_resource_parse_quantity() {
        let big = |negative: bool, digits: &str| GoQuantity::Big {
            negative,
            digits: digits.to_string(),
        };
        let cases: Vec<(&str, Result<GoQuantity, &str>)> = vec![
            ("1", Ok(GoQuantity::Nanos(NANO))),
            ("1.5Gi", Ok(GoQuantity::Nanos((3i128 << 29) * NANO))),
            ("100m", Ok(GoQuantity::Nanos(NANO / 10))),
            ("1e3", Ok(GoQuantity::Nanos(1000 * NANO))),
            ("1E+3", Ok(GoQuantity::Nanos(1000 * NANO))),
            ("-2", Ok(GoQuantity::Nanos(-2 * NANO))),
            ("0.1n", Ok(GoQuantity::Nanos(1))),
            ("-0.1n", Ok(GoQuantity::Nanos(-1))),
            ("0.00000000001", Ok(GoQuantity::Nanos(1))),
            (".", Ok(GoQuantity::Nanos(0))),
            ("Ki", Ok(GoQuantity::Nanos(0))),
            ("1.", Ok(GoQuantity::Nanos(NANO))),
            ("", Err(ERR_FORMAT_WRONG)),
            (" 1", Err(ERR_FORMAT_WRONG)),
            ("10Mo", Err(ERR_FORMAT_WRONG)),
            ("1e3.5", Err(ERR_FORMAT_WRONG)),
            ("10Mm", Err(ERR_SUFFIX)),
            ("1KiB", Err(ERR_FORMAT_WRONG)),
            ("1iK", Err(ERR_SUFFIX)),
            ("1e", Err(ERR_SUFFIX)),
            (
                "9999999999999999999999999999999999999G",
                Ok(big(false, &format!("{}{}", "9".repeat(37), "0".repeat(18)))),
            ),
            (
                "-9999999999999999999999999999999999999G",
                Ok(big(true, &format!("{}{}", "9".repeat(37), "0".repeat(18)))),
            ),
            // BinarySI values are capped at 2^63-1 (upstream's maxAllowed).
            (
                "99999999999999999999Ei",
                Ok(GoQuantity::Nanos(i128::from(i64::MAX) * NANO)),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_go(text), want, "{text:?}");
        }
    }

    #[test]
    fn wide_arithmetic() {
        let q = |s: &str| parse_go(s).unwrap();
        let huge = q("9999999999999999999999999999999999999G");
        assert_eq!(huge.cmp_value(&q("1")), Ordering::Greater);
        assert_eq!(huge.neg().cmp_value(&q("-1")), Ordering::Less);
        assert_eq!(huge.sub(&huge), GoQuantity::Nanos(0));
        assert_eq!(huge.sub(&q("1")).add(&q("1")), huge);
        assert_eq!(
            huge.add(&huge)
                .cmp_value(&q("19999999999999999999999999999999999998G")),
            Ordering::Equal
        );
        assert_eq!(huge.as_i64_units(), None);
        assert_eq!(q("2").as_i64_units(), Some(2));
        assert_eq!(huge.sign(), Ordering::Greater);
    }

    #[test]
    fn formats_binary_canonical() {
        assert_eq!(Quantity::from_nanos((1i128 << 30) * NANO).text, "1Gi");
        assert_eq!(Quantity::from_nanos(1000 * NANO).text, "1000");
        assert_eq!(Quantity::from_nanos(2048 * NANO).text, "2Ki");
        assert_eq!(Quantity::from_nanos(NANO / 2).text, "500m");
    }

    #[test]
    fn value_rounds_up() {
        assert_eq!(Quantity::parse("1500m").unwrap().value(), 2);
        assert_eq!(Quantity::parse("2").unwrap().value(), 2);
    }
}
