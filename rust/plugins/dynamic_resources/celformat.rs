//! Kubernetes' CEL format library (`k8s.io/apiserver/pkg/cel/library/format.go`), which
//! the apiserver's base environment enables from v1.31 on and so upstream's DRA
//! selectors have: `format.named(name)` (an optional `kubernetes.NamedFormat`),
//! `format.dns1123Label()` and the other named formats, and `<format>.validate(s)`
//! (`optional.none()` when `s` is valid, else the optional list of the validation
//! errors).
//!
//! **Why hand-written.** Each format is a Go validation function whose error texts
//! are the result: apimachinery's `IsDNS1123Label`, `IsDNS1123Subdomain`,
//! `IsDNS1035Label` (`NameIsDNSLabel` & co., with `maskTrailingDash` for the prefix
//! forms), `content.IsLabelKey` (qualified names) and `content.IsLabelValue`, Go's
//! `url.ParseRequestURI` ([`super::cellib::GoUrl`]) and kube-openapi's `strfmt`
//! validators (`uuid`, `byte`: govalidator's base64 pattern, `date`: Go's
//! `time.Parse("2006-01-02")`, `datetime`). They are ported here step by step with their
//! regular expressions (the `regex` crate accepts the same RE2 syntax) and messages; no
//! crate words them so. Costs are upstream's estimator's (`validate`: the string's
//! traversal times the format's regex size factor; `format.named`: 1).

use std::sync::LazyLock;

use cel::common::types::{CelList, CelOptional, CelString, Type, STRING_TYPE};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::{Env, ExecutionError};
use regex::Regex;

use super::cellib::GoUrl;

static FORMAT_TYPE: Type = Type::new_unspecified_type("kubernetes.NamedFormat");

/// One named format (upstream `apiservercel.Format`).
pub struct Format {
    /// Upstream's `Name`, which equality compares.
    pub name: &'static str,
    validate: fn(&str) -> Vec<String>,
    /// Upstream's `MaxRegexSize`, for the cost of `validate`.
    pub max_regex_size: u64,
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// A `kubernetes.NamedFormat` value.
#[derive(Debug, Clone, Copy)]
pub struct CelFormat(pub &'static Format);

impl Val for CelFormat {
    fn get_type(&self) -> &Type {
        &FORMAT_TYPE
    }
    fn cel_type() -> &'static Type {
        &FORMAT_TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<CelFormat>()
            .is_some_and(|o| o.0.name == self.0.name)
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(*self)
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}
impl StaticVal for CelFormat {}

// ---- apimachinery's validation ----------------------------------------------------------

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

fn dns1123_subdomain_fmt() -> String {
    format!("{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*")
}

fn label_value_fmt() -> String {
    format!("({LABEL_KEY_FMT})?")
}

fn anchored(re: &str) -> Regex {
    Regex::new(&format!("^{re}$")).expect("upstream's pattern")
}

static DNS1123_LABEL: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_LABEL_FMT));
static DNS1123_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| anchored(&dns1123_subdomain_fmt()));
static DNS1035_LABEL: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1035_LABEL_FMT));
static LABEL_KEY: LazyLock<Regex> = LazyLock::new(|| anchored(LABEL_KEY_FMT));
static LABEL_VALUE: LazyLock<Regex> = LazyLock::new(|| anchored(&label_value_fmt()));
static UUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
        .expect("strfmt.UUIDPattern")
});
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        "^(?:[A-Za-z0-9+\\/]{4})*(?:[A-Za-z0-9+\\/]{2}==|[A-Za-z0-9+\\/]{3}=|[A-Za-z0-9+\\/]{4})$",
    )
    .expect("govalidator.Base64")
});
static DATE_TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new("^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
        .expect("strfmt.DateTimePattern")
});

/// `RegexError` (util/validation and validate/content word it alike).
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{re}')");
    }
    let list: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    // Go appends "'e', " per example and " or " between them (hence two spaces)
    format!(
        "{msg} (e.g. {}regex used for validation is '{re}')",
        list.join(" or ")
    )
}

/// util/validation's `MaxLenError` ("characters"); validate/content's says "bytes".
fn max_len_error(n: usize, unit: &str) -> String {
    format!("must be no more than {n} {unit}")
}

/// `IsDNS1123Label` (util/validation and validate/content differ only in `unit`).
fn is_dns1123_label(value: &str, unit: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63, unit));
    }
    if !DNS1123_LABEL.is_match(value) {
        if DNS1123_SUBDOMAIN.is_match(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

fn is_dns1123_subdomain(value: &str, unit: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253, unit));
    }
    if !DNS1123_SUBDOMAIN.is_match(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            &dns1123_subdomain_fmt(),
            &["example.com"],
        ));
    }
    errs
}

fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63, "characters"));
    }
    if !DNS1035_LABEL.is_match(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// apimachinery's `maskTrailingDash` (it drops the two last characters).
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let cut = name.len() - 2;
        if name.is_char_boundary(cut) {
            return format!("{}a", &name[..cut]);
        }
        // Go slices bytes; a multi-byte character before the dash is cut in two
        let mut bytes = name.as_bytes()[..cut].to_vec();
        bytes.push(b'a');
        return String::from_utf8_lossy(&bytes).into_owned();
    }
    name.to_string()
}

/// validate/content's `IsLabelKey` (upstream `IsQualifiedName`).
fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in is_dns1123_subdomain(prefix, "bytes") {
                    errs.push(format!("prefix part {m}"));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63, "bytes")));
    }
    if !LABEL_KEY.is_match(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// validate/content's `IsLabelValue`.
fn is_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63, "bytes"));
    }
    if !LABEL_VALUE.is_match(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            &label_value_fmt(),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

// ---- kube-openapi's strfmt ----------------------------------------------------------------

/// Go's `atoi` as `time.Parse` uses it for a year: an optional sign, then digits only.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i64 = digits.parse().ok()?;
    Some(if s.starts_with('-') { -v } else { v })
}

/// `time.Parse("2006-01-02", s)` succeeds (strfmt `IsDate`).
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || !s.is_char_boundary(4) {
        return false;
    }
    let Some(year) = go_atoi(&s[..4]) else {
        return false;
    };
    let two = |i: usize| -> Option<u32> {
        (b[i].is_ascii_digit() && b[i + 1].is_ascii_digit())
            .then(|| u32::from(b[i] - b'0') * 10 + u32::from(b[i + 1] - b'0'))
    };
    if b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(month), Some(day)) = (two(5), two(8)) else {
        return false;
    };
    if !(1..=12).contains(&month) {
        return false;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    (1..=days).contains(&day)
}

/// strfmt `IsDateTime`.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(m) = DATE_TIME.captures(parts[1]) else {
        return false;
    };
    let g = |i: usize| m.get(i).map_or("", |x| x.as_str());
    g(1) <= "23" && g(2) <= "59" && g(3) <= "59"
}

fn one(ok: bool, msg: &str) -> Vec<String> {
    if ok {
        Vec::new()
    } else {
        vec![msg.to_string()]
    }
}

macro_rules! format_def {
    ($name:literal, $max:expr, $f:expr) => {
        Format {
            name: $name,
            validate: $f,
            max_regex_size: $max,
        }
    };
}

/// Upstream's `ConstantFormats`, by the name `format.named` takes.
pub static FORMATS: &[(&str, Format)] = &[
    (
        "dns1123Label",
        format_def!("DNS1123Label", 30, |s| is_dns1123_label(s, "characters")),
    ),
    (
        "dns1123Subdomain",
        format_def!("DNS1123Subdomain", 60, |s| is_dns1123_subdomain(
            s,
            "characters"
        )),
    ),
    (
        "dns1035Label",
        format_def!("DNS1035Label", 30, is_dns1035_label),
    ),
    (
        "qualifiedName",
        format_def!("QualifiedName", 60, is_qualified_name),
    ),
    (
        "dns1123LabelPrefix",
        format_def!("DNS1123LabelPrefix", 30, |s| {
            is_dns1123_label(&mask_trailing_dash(s), "characters")
        }),
    ),
    (
        "dns1123SubdomainPrefix",
        format_def!("DNS1123SubdomainPrefix", 60, |s| {
            is_dns1123_subdomain(&mask_trailing_dash(s), "characters")
        }),
    ),
    (
        "dns1035LabelPrefix",
        format_def!("DNS1035LabelPrefix", 30, |s| is_dns1035_label(
            &mask_trailing_dash(s)
        )),
    ),
    ("labelValue", format_def!("LabelValue", 40, is_label_value)),
    (
        "uri",
        format_def!("URI", 1103, |s| GoUrl::request_uri_error(s)
            .into_iter()
            .collect()),
    ),
    (
        "uuid",
        // len(strfmt.UUIDPattern)
        format_def!("uuid", 70, |s| one(
            UUID.is_match(s),
            "does not match the UUID format"
        )),
    ),
    (
        "byte",
        format_def!("byte", 84, |s| one(BASE64.is_match(s), "invalid base64")),
    ),
    (
        "date",
        // len(strfmt.DateTimePattern)
        format_def!("date", 71, |s| one(is_date(s), "invalid date")),
    ),
    (
        "datetime",
        format_def!("datetime", 71, |s| one(is_date_time(s), "invalid datetime")),
    ),
];

fn format_of(name: &str) -> Option<&'static Format> {
    FORMATS.iter().find(|(n, _)| *n == name).map(|(_, f)| f)
}

fn arg_string(v: &CowVal<'_, '_>, function: &str) -> Result<String, ExecutionError> {
    v.downcast_ref::<CelString>()
        .map(|s| s.inner().to_string())
        .ok_or_else(|| {
            ExecutionError::no_such_overload(function, vec![v.get_type().name().to_owned()])
        })
}

fn format_named<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let name = arg_string(
        args.first()
            .ok_or_else(|| ExecutionError::no_such_overload("format.named", vec![]))?,
        "format.named",
    )?;
    Ok(CowVal::owned(match format_of(&name) {
        Some(f) => CelOptional::of(Box::new(CelFormat(f))),
        None => CelOptional::none(),
    }))
}

fn format_validate<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [f, s] = args.as_slice() else {
        return Err(ExecutionError::no_such_overload("validate", vec![]));
    };
    let format = f.downcast_ref::<CelFormat>().ok_or_else(|| {
        ExecutionError::no_such_overload("validate", vec![f.get_type().name().to_owned()])
    })?;
    let errs = (format.0.validate)(&arg_string(s, "validate")?);
    if errs.is_empty() {
        return Ok(CowVal::owned(CelOptional::none()));
    }
    let list: Vec<Box<dyn Val>> = errs
        .into_iter()
        .map(|e| Box::new(CelString::from(e)) as Box<dyn Val>)
        .collect();
    Ok(CowVal::owned(CelOptional::of(Box::new(CelList::from(
        list,
    )))))
}

macro_rules! constant_formats {
    ($($fn:ident => $name:literal),* $(,)?) => {
        $(
            fn $fn<'b, 'v>(_: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
                let f = format_of($name).expect("a constant format");
                Ok(CowVal::owned(CelFormat(f)))
            }
        )*
        const CONSTANT_FORMATS: &[(&str, cel::common::functions::Function)] = &[
            $(($name, $fn)),*
        ];
    };
}

constant_formats!(
    f_dns1123_label => "dns1123Label",
    f_dns1123_subdomain => "dns1123Subdomain",
    f_dns1035_label => "dns1035Label",
    f_qualified_name => "qualifiedName",
    f_dns1123_label_prefix => "dns1123LabelPrefix",
    f_dns1123_subdomain_prefix => "dns1123SubdomainPrefix",
    f_dns1035_label_prefix => "dns1035LabelPrefix",
    f_label_value => "labelValue",
    f_uri => "uri",
    f_uuid => "uuid",
    f_byte => "byte",
    f_date => "date",
    f_datetime => "datetime",
);

/// Registers the library with the environment.
pub fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    env.add_type(FORMAT_TYPE.to_owned())?;
    env.add_overload(
        "format.named",
        "format-named",
        vec![STRING_TYPE],
        format_named,
    )?;
    env.add_member_overload(
        "validate",
        "format-validate",
        FORMAT_TYPE.to_owned(),
        vec![STRING_TYPE],
        format_validate,
    )?;
    for (name, f) in CONSTANT_FORMATS {
        let full = format!("format.{name}");
        env.add_overload(&full, &full, vec![], *f)?;
    }
    Ok(())
}

/// Upstream's `CallCost` for the library's functions (`args` has the target first).
pub fn call_cost(function: &str, args: &[&dyn Val]) -> Option<u64> {
    match function {
        "validate" => {
            let format = args.first()?.downcast_ref::<CelFormat>()?;
            let len = args.get(1).map_or(0, |s| cel::cost::actual_size(*s));
            let str_cost = ((1.0 + len as f64) * 0.1).ceil() as u64;
            let regex_cost = (format.0.max_regex_size as f64 * 0.25).ceil() as u64;
            Some(str_cost * regex_cost)
        }
        "format.named" => Some(1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validators_follow_upstream() {
        let v = |name: &str, s: &str| (format_of(name).unwrap().validate)(s);
        assert!(v("dns1123Label", "my-name").is_empty());
        assert_eq!(v("dns1123Label", "a.b"), vec!["must not contain dots"]);
        assert_eq!(v("dns1123LabelPrefix", "my-name-"), Vec::<String>::new());
        assert_eq!(mask_trailing_dash("ab-"), "aa");
        assert!(v("qualifiedName", "apiextensions.k8s.io/v1beta1").is_empty());
        assert_eq!(
            v("qualifiedName", "/x"),
            vec!["prefix part must be non-empty"]
        );
        assert!(v("uuid", "123e4567-e89b-12d3-a456-426614174000").is_empty());
        assert!(v("byte", "aGVsbG8=").is_empty());
        assert_eq!(v("byte", ""), vec!["invalid base64"]);
        assert!(v("date", "2024-02-29").is_empty());
        assert_eq!(v("date", "2023-02-29"), vec!["invalid date"]);
        assert!(v("datetime", "2021-01-01T00:00:00Z").is_empty());
        assert_eq!(
            v("datetime", "2021-01-01T24:00:00Z"),
            vec!["invalid datetime"]
        );
    }
}
