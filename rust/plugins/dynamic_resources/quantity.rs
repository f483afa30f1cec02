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
