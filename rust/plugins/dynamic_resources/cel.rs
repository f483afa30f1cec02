//! CEL device selectors with the Kubernetes DRA environment, on the `cel` crate
//! (`k8s.io/dynamic-resource-allocation/cel` upstream).
//!
//! **Why this crate.** Upstream compiles selectors with cel-go in the apiserver's base
//! environment (`environment.MustBaseEnvSet`, StoredExpressions) extended with DRA's
//! `device` variable and `cel.bind`. Among the Rust CEL libraries, `cel` (0.15, the
//! newest on crates.io, maintained under cel-rust) parses with the same ANTLR grammar
//! as cel-go and evaluates fast enough for the allocator's hot path (a selector runs on
//! every device of every node until its verdict is cached); `cel-interpreter` is its
//! older name, and `cel-cxx` binds Google's cel-cpp, whose build fetches cel-cpp with
//! Bazel (not possible here, and a C++ toolchain's worth of build time). The crate has
//! no type checker and no cost metering, so this module adds the checker's part a
//! selector meets ([`super::celcheck`]: cel-go's compile errors and their printed form),
//! a cost meter (below) and the Kubernetes libraries.
//!
//! **The environment.** The one variable upstream declares, `device`, with `driver`,
//! `allowMultipleAllocations` (DRAConsumableCapacity, on by default in v1.36),
//! `attributes` and `capacity`. `attributes` and `capacity` are maps from a domain to a
//! map of identifiers; looking up a domain the device has nothing in yields an empty
//! map (upstream's `mapper` with a default), so `device.attributes["x.example.com"].foo`
//! fails with "no such key: foo" rather than "no such domain", and `has(...)` works at
//! both levels. An attribute name without a domain is filed under the device's driver.
//! Values are `int`, `bool`, `string`, semantic versions (Kubernetes' `semver` type)
//! and, for capacities, Kubernetes' `Quantity` type. Libraries, as upstream's base
//! environment enables them for stored expressions: the standard library; cel-go's
//! strings extension (the crate's, cel-go's version 2 functions); cel-go's lists
//! extension (version 3: `slice`, `flatten`, `distinct`, `reverse`, `sort`, `sortBy`,
//! `lists.range`); cel-go's sets extension (`sets.contains`, `sets.equivalent`,
//! `sets.intersects`, here); `cel.bind` (`ext.Bindings`); Kubernetes' quantity library
//! (`quantity()`, `isQuantity()`, `compareTo`, `isGreaterThan`, `isLessThan`, `add`,
//! `sub`, `sign`, `isInteger`, `asInteger`, `asApproximateFloat`) and semver library
//! (`semver()`, `isSemver()`, `major`, `minor`, `patch`, `compareTo`, `isGreaterThan`,
//! `isLessThan`); Kubernetes' lists (`isSorted`, `sum`, `min`, `max`, `indexOf`,
//! `lastIndexOf`), IP, CIDR and URL libraries ([`super::cellib`]); cel-go's
//! two-variable comprehensions (`all`, `exists`, `existsOne` with two variables,
//! `transformList`, `transformMap`, `transformMapEntry`: macros here, bindings in the
//! patched interpreter); optional values as the crate has them.
//! cel-go's math extension is not in upstream's environment, and its `math.` functions
//! are undeclared references here too.
//!
//! Each expression is compiled once and kept in a [`CelCache`] shared by every
//! allocation (upstream keeps an LRU of 10; keeping every distinct expression costs
//! little, there are few and they are short). A compile error is kept with the
//! expression and reported by the allocator the way upstream reports it
//! ("CEL compile error: compilation failed: ERROR: <input>:1:8: ...").
//!
//! Kubernetes' regex library (`find`, `findAll`, on the `regex` crate, RE2-like as Go's
//! `regexp`) is here too; Kubernetes' lists, IP, CIDR and URL libraries are in
//! [`super::cellib`].
//!
//! **Runtime cost.** Upstream evaluates every selector with cel-go's cost tracker and
//! `CELSelectorExpressionMaxCost` (1,000,000) as the limit; past it the evaluation fails
//! with "operation cancelled: actual cost limit exceeded", which the allocator reports
//! as any CEL runtime error ("claim ns/name: selector #0: CEL runtime error: operation
//! cancelled: actual cost limit exceeded"). The crate has no cost hook, so ksched builds
//! it from a vendored copy with a small patch (`rust/vendor/cel`, `PATCH.md` there):
//! a thread-local counter that charges each evaluation step as cel-go's observer does
//! (`cel::cost`), with Kubernetes' call cost estimator ([`super::cellib::call_cost`])
//! plugged in. `testdata/cel_upstream.jsonl` holds expressions evaluated by upstream's
//! own code with their actual costs, verdicts and errors; the test below requires
//! ksched to agree on every one.
//!
//! **Differences from cel-go a user can meet.**
//! * Compile-time checking is [`super::celcheck`]'s subset of cel-go's checker: an
//!   expression it does not reject fails, if at all, when evaluated, with the crate's
//!   "no such overload"-style message (see that module for what it covers).
//! * Kubernetes' format library (`format.named`, `format.dns1123Label()`...,
//!   `validate`) is [`super::celformat`]'s port; cel-go's `string.format` is the
//!   crate's, with cel-go's compile-time validation of a literal format string over a
//!   list literal (`celcheck`).
//! * A syntax error lists every token the crate's parser expected, where cel-go's
//!   ANTLR listener often says only "expecting <EOF>".
//! * `quantity()` parses as `resource.ParseQuantity` does, step by step, with its
//!   three errors word for word, any magnitude (beyond `i128` nano-units a value is
//!   kept as decimal digits, as upstream's `inf.Dec` keeps it) and BinarySI values
//!   capped at 2^63-1; `semver()` and the `version` attribute parse as blang/semver's
//!   `Parse`, with its errors (the semver crate holds the value). IP, CIDR and URL
//!   errors are Go's, word for word. `asApproximateFloat` divides the nano-units by
//!   1e9, where upstream multiplies its internal mantissa by a power of ten (the last
//!   digit may differ).
//! * The crate's strings extension also has `reverse` on strings (cel-go's strings
//!   version 3), which upstream's version 2 lacks (upstream: "found no matching overload
//!   for 'reverse' applied to 'string.()'" when compiling).
//! * Costs agree with cel-go's for what a selector evaluates, also after an ordinary
//!   error (the vendored crate evaluates and charges what cel-go's interpreter does
//!   before it returns the first error, see `rust/vendor/cel/PATCH.md`), with one
//!   exception: where a comprehension over a map stops early (`exists`, or `all()` with
//!   an error), the cost depends on the order of the keys, which Go randomizes.
//! * Runtime errors of `string.format` on a dynamic value: upstream's strings library
//!   version 2 formats with cel-go's first formatter ("decimal clause can only be used
//!   on integers"), the crate's with the newer one ("on ints, uints, and doubles").

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cel::common::ast::{ComprehensionExpr, Expr, ListExpr};
use cel::common::traits::{Container, Indexer};
use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelString, Type, MAP_TYPE,
};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::parser::Macro;
use cel::{extensions, Context, Env, ExecutionError, Program, Value};

use super::api::{Device, DeviceAttribute};
use super::quantity::{GoQuantity, Quantity};

// ---- Kubernetes' Quantity and semver types ------------------------------------------------

static QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");
static SEMVER_TYPE: Type = Type::new_unspecified_type("kubernetes.Semver");

/// A `kubernetes.Quantity` value: nano-units, of any magnitude (upstream's `inf.Dec`).
#[derive(Debug, Clone)]
pub struct CelQuantity(pub GoQuantity);

impl Val for CelQuantity {
    fn get_type(&self) -> &Type {
        &QUANTITY_TYPE
    }
    fn cel_type() -> &'static Type {
        &QUANTITY_TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<CelQuantity>()
            .is_some_and(|o| o.0.cmp_value(&self.0) == Ordering::Equal)
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}
impl StaticVal for CelQuantity {}

#[derive(Debug, Clone)]
pub struct CelSemver(pub semver::Version);

impl Val for CelSemver {
    fn get_type(&self) -> &Type {
        &SEMVER_TYPE
    }
    fn cel_type() -> &'static Type {
        &SEMVER_TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<CelSemver>()
            .is_some_and(|o| o.0.cmp_precedence(&self.0) == Ordering::Equal)
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}
impl StaticVal for CelSemver {}

fn ord_int(o: Ordering) -> CelInt {
    CelInt::from(match o {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    })
}

/// `quantity(s)`: `resource.ParseQuantity`, its errors word for word.
fn parse_quantity(s: &CelString<'_>) -> Result<CelQuantity, ExecutionError> {
    Quantity::parse_go(s.inner())
        .map(CelQuantity)
        .map_err(|e| ExecutionError::function_error("quantity", e))
}
fn is_quantity(s: &CelString<'_>) -> CelBool {
    CelBool::from(Quantity::parse_go(s.inner()).is_ok())
}
fn q_sign(q: &CelQuantity) -> CelInt {
    ord_int(q.0.sign())
}
fn q_is_greater_than(a: &CelQuantity, b: &CelQuantity) -> CelBool {
    CelBool::from(a.0.cmp_value(&b.0) == Ordering::Greater)
}
fn q_is_less_than(a: &CelQuantity, b: &CelQuantity) -> CelBool {
    CelBool::from(a.0.cmp_value(&b.0) == Ordering::Less)
}
fn q_compare_to(a: &CelQuantity, b: &CelQuantity) -> CelInt {
    ord_int(a.0.cmp_value(&b.0))
}
fn int_nanos(b: &CelInt) -> GoQuantity {
    GoQuantity::Nanos(i128::from(i64::from(*b)) * 1_000_000_000)
}
fn q_add(a: &CelQuantity, b: &CelQuantity) -> CelQuantity {
    CelQuantity(a.0.add(&b.0))
}
fn q_add_int(a: &CelQuantity, b: &CelInt) -> CelQuantity {
    CelQuantity(a.0.add(&int_nanos(b)))
}
fn q_sub(a: &CelQuantity, b: &CelQuantity) -> CelQuantity {
    CelQuantity(a.0.sub(&b.0))
}
fn q_sub_int(a: &CelQuantity, b: &CelInt) -> CelQuantity {
    CelQuantity(a.0.sub(&int_nanos(b)))
}
fn q_is_integer(q: &CelQuantity) -> CelBool {
    CelBool::from(q.0.as_i64_units().is_some())
}
fn q_as_integer(q: &CelQuantity) -> Result<CelInt, ExecutionError> {
    q.0.as_i64_units().map(CelInt::from).ok_or_else(|| {
        ExecutionError::function_error("asInteger", "cannot convert value to integer")
    })
}
fn q_as_approximate_float(q: &CelQuantity) -> CelDouble {
    CelDouble::from(q.0.as_f64())
}

/// Go's `strconv.ParseUint(s, 10, 64)`, with its error text.
fn go_parse_uint(s: &str) -> Result<u64, String> {
    let quoted = super::cellib::go_quote(s);
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.ParseUint: parsing {quoted}: invalid syntax"
        ));
    }
    s.parse::<u64>()
        .map_err(|_| format!("strconv.ParseUint: parsing {quoted}: value out of range"))
}

fn semver_number(part: &str, what: &str) -> Result<u64, String> {
    let quoted = super::cellib::go_quote(part);
    if !part.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "Invalid character(s) found in {what} number {quoted}"
        ));
    }
    if part.len() > 1 && part.starts_with('0') {
        let mut word = what.to_string();
        word[..1].make_ascii_uppercase();
        return Err(format!(
            "{word} number must not contain leading zeroes {quoted}"
        ));
    }
    go_parse_uint(part)
}

fn semver_alphanumeric(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// blang/semver v4's `Parse`, which Kubernetes' CEL semver library and the device
/// `version` attribute use: its checks in its order and its error texts (the semver
/// crate, which holds the value and compares precedence as blang does, words its
/// errors otherwise and accepts a little less).
fn parse_semver_text(text: &str) -> Result<semver::Version, String> {
    if text.is_empty() {
        return Err("Version string empty".to_string());
    }
    let parts: Vec<&str> = text.splitn(3, '.').collect();
    if parts.len() != 3 {
        return Err("No Major.Minor.Patch elements found".to_string());
    }
    let major = semver_number(parts[0], "major")?;
    let minor = semver_number(parts[1], "minor")?;
    let mut patch_str = parts[2];
    let mut build: Vec<&str> = Vec::new();
    let mut pre: Vec<&str> = Vec::new();
    if let Some(i) = patch_str.find('+') {
        build = patch_str[i + 1..].split('.').collect();
        patch_str = &patch_str[..i];
    }
    if let Some(i) = patch_str.find('-') {
        pre = patch_str[i + 1..].split('.').collect();
        patch_str = &patch_str[..i];
    }
    let patch = semver_number(patch_str, "patch")?;
    for p in &pre {
        let quoted = super::cellib::go_quote(p);
        if p.is_empty() {
            return Err("Prerelease is empty".to_string());
        }
        if p.bytes().all(|b| b.is_ascii_digit()) {
            if p.len() > 1 && p.starts_with('0') {
                return Err(format!(
                    "Numeric PreRelease version must not contain leading zeroes {quoted}"
                ));
            }
            go_parse_uint(p)?;
        } else if !semver_alphanumeric(p) {
            return Err(format!("Invalid character(s) found in prerelease {quoted}"));
        }
    }
    for b in &build {
        if b.is_empty() {
            return Err("Build meta data is empty".to_string());
        }
        if !semver_alphanumeric(b) {
            return Err(format!(
                "Invalid character(s) found in build meta data {}",
                super::cellib::go_quote(b)
            ));
        }
    }
    let mut v = semver::Version::new(major, minor, patch);
    if !pre.is_empty() {
        v.pre = semver::Prerelease::new(&pre.join(".")).map_err(|e| e.to_string())?;
    }
    if !build.is_empty() {
        v.build = semver::BuildMetadata::new(&build.join(".")).map_err(|e| e.to_string())?;
    }
    Ok(v)
}
/// The semver library's `normalizeAndParse`: a "v" prefix, leading zeros and missing
/// minor or patch numbers are accepted.
fn normalize_semver_text(text: &str) -> Result<semver::Version, String> {
    let text = text.strip_prefix('v').unwrap_or(text);
    let mut parts: Vec<String> = text.splitn(3, '.').map(str::to_string).collect();
    for p in parts.iter_mut() {
        if p.len() > 1 {
            let mut t = p.trim_start_matches('0').to_string();
            if t.is_empty() || !t.as_bytes()[0].is_ascii_digit() {
                t.insert(0, '0');
            }
            *p = t;
        }
    }
    if parts.len() < 3 {
        if parts.last().is_some_and(|l| l.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".to_string());
        }
        while parts.len() < 3 {
            parts.push("0".to_string());
        }
    }
    parse_semver_text(&parts.join("."))
}
fn make_semver_normalized(
    s: &CelString<'_>,
    normalize: &CelBool,
) -> Result<CelSemver, ExecutionError> {
    let parsed = if *normalize.inner() {
        normalize_semver_text(s.inner())
    } else {
        parse_semver_text(s.inner())
    };
    parsed
        .map(CelSemver)
        .map_err(|e| ExecutionError::function_error("semver", e))
}
fn is_semver_normalized(s: &CelString<'_>, normalize: &CelBool) -> CelBool {
    CelBool::from(if *normalize.inner() {
        normalize_semver_text(s.inner()).is_ok()
    } else {
        parse_semver_text(s.inner()).is_ok()
    })
}
fn make_semver(s: &CelString<'_>) -> Result<CelSemver, ExecutionError> {
    parse_semver_text(s.inner())
        .map(CelSemver)
        .map_err(|e| ExecutionError::function_error("semver", e))
}
fn is_semver(s: &CelString<'_>) -> CelBool {
    CelBool::from(parse_semver_text(s.inner()).is_ok())
}
fn s_major(v: &CelSemver) -> CelInt {
    CelInt::from(v.0.major as i64)
}
fn s_minor(v: &CelSemver) -> CelInt {
    CelInt::from(v.0.minor as i64)
}
fn s_patch(v: &CelSemver) -> CelInt {
    CelInt::from(v.0.patch as i64)
}
fn s_is_greater_than(a: &CelSemver, b: &CelSemver) -> CelBool {
    CelBool::from(a.0.cmp_precedence(&b.0) == Ordering::Greater)
}
fn s_is_less_than(a: &CelSemver, b: &CelSemver) -> CelBool {
    CelBool::from(a.0.cmp_precedence(&b.0) == Ordering::Less)
}
fn s_compare_to(a: &CelSemver, b: &CelSemver) -> CelInt {
    ord_int(a.0.cmp_precedence(&b.0))
}

fn kubernetes_library(env: &mut Env) -> Result<(), cel::DeclarationError> {
    cel::add_overload!(env, fn parse_quantity: (CelString) -> Result<CelQuantity>, name = "quantity")?;
    cel::add_overload!(env, fn is_quantity: (CelString) -> CelBool, name = "isQuantity")?;
    cel::add_overload!(env, fn q_sign: (CelQuantity) -> CelInt, name = "sign")?;
    cel::add_member_overload!(env, fn q_is_greater_than: (CelQuantity, CelQuantity) -> CelBool, name = "isGreaterThan")?;
    cel::add_member_overload!(env, fn q_is_less_than: (CelQuantity, CelQuantity) -> CelBool, name = "isLessThan")?;
    cel::add_member_overload!(env, fn q_compare_to: (CelQuantity, CelQuantity) -> CelInt, name = "compareTo")?;
    cel::add_member_overload!(env, fn q_add: (CelQuantity, CelQuantity) -> CelQuantity, name = "add")?;
    cel::add_member_overload!(env, fn q_add_int: (CelQuantity, CelInt) -> CelQuantity, name = "add")?;
    cel::add_member_overload!(env, fn q_sub: (CelQuantity, CelQuantity) -> CelQuantity, name = "sub")?;
    cel::add_member_overload!(env, fn q_sub_int: (CelQuantity, CelInt) -> CelQuantity, name = "sub")?;
    cel::add_member_overload!(env, fn q_is_integer: (CelQuantity) -> CelBool, name = "isInteger")?;
    cel::add_member_overload!(env, fn q_as_integer: (CelQuantity) -> Result<CelInt>, name = "asInteger")?;
    cel::add_member_overload!(env, fn q_as_approximate_float: (CelQuantity) -> CelDouble, name = "asApproximateFloat")?;
    cel::add_overload!(env, fn make_semver: (CelString) -> Result<CelSemver>, name = "semver")?;
    cel::add_overload!(env, fn is_semver: (CelString) -> CelBool, name = "isSemver")?;
    cel::add_overload!(env, fn make_semver_normalized: (CelString, CelBool) -> Result<CelSemver>, name = "semver")?;
    cel::add_overload!(env, fn is_semver_normalized: (CelString, CelBool) -> CelBool, name = "isSemver")?;
    cel::add_member_overload!(env, fn s_major: (CelSemver) -> CelInt, name = "major")?;
    cel::add_member_overload!(env, fn s_minor: (CelSemver) -> CelInt, name = "minor")?;
    cel::add_member_overload!(env, fn s_patch: (CelSemver) -> CelInt, name = "patch")?;
    cel::add_member_overload!(env, fn s_is_greater_than: (CelSemver, CelSemver) -> CelBool, name = "isGreaterThan")?;
    cel::add_member_overload!(env, fn s_is_less_than: (CelSemver, CelSemver) -> CelBool, name = "isLessThan")?;
    cel::add_member_overload!(env, fn s_compare_to: (CelSemver, CelSemver) -> CelInt, name = "compareTo")?;
    // cel.bind(name, init, expr): cel-go's ext.Bindings, a comprehension over nothing
    // whose accumulator is the bound name.
    env.add_macro(Macro::receiver("bind", 3, |helper, target, args| {
        if !matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(ns)) if ns == "cel") {
            return Ok(None);
        }
        let result = args.pop().expect("three arguments");
        let init = args.pop().expect("three arguments");
        let var = args.pop().expect("three arguments");
        let name = match var.expr {
            Expr::Ident(name) => name,
            _ => {
                return Err(helper.new_error(
                    var.id,
                    "cel.bind() variable names must be simple identifiers",
                ))
            }
        };
        let empty = helper.next_expr(Expr::List(ListExpr {
            elements: Vec::new(),
            optional_indices: Vec::new(),
        }));
        let cond = helper.next_expr(Expr::Literal(cel::common::ast::LiteralValue::Boolean(
            false.into(),
        )));
        let step = helper.next_expr(Expr::Ident(name.clone()));
        Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(
            ComprehensionExpr {
                iter_range: empty,
                iter_var: "#unused".to_string(),
                iter_var2: None,
                accu_var: name,
                accu_init: init,
                loop_cond: cond,
                loop_step: step,
                result,
            },
        )))))
    }))?;
    Ok(())
}

// ---- cel-go's ext.TwoVarComprehensions -------------------------------------------------------

/// The macros of cel-go's two-variable comprehensions (`all`, `exists`, `existsOne` with
/// two variables, `transformList`, `transformMap`, `transformMapEntry`), expanded as
/// cel-go's `ext/comprehensions.go` does; the interpreter binds a list's index and
/// element or a map's key and value.
fn two_var_comprehensions(env: &mut Env) -> Result<(), cel::DeclarationError> {
    use cel::common::ast::{operators, CallExpr, IdedExpr, LiteralValue, MapExpr};
    type Helper<'a> = cel::parser::MacroExprHelper<'a>;
    const ACCU: &str = "@result";

    fn call(h: &mut Helper<'_>, name: &str, args: Vec<IdedExpr>) -> IdedExpr {
        h.next_expr(Expr::Call(CallExpr {
            func_name: name.to_string(),
            target: None,
            args,
        }))
    }
    fn accu(h: &mut Helper<'_>) -> IdedExpr {
        h.next_expr(Expr::Ident(ACCU.to_string()))
    }
    fn lit(h: &mut Helper<'_>, v: LiteralValue) -> IdedExpr {
        h.next_expr(Expr::Literal(v))
    }
    /// cel-go's `extractIterVars`, with its errors.
    fn vars(
        h: &mut Helper<'_>,
        a: &IdedExpr,
        b: &IdedExpr,
    ) -> Result<(String, String), cel::parser::ParseError> {
        let name = |e: &IdedExpr| match &e.expr {
            Expr::Ident(n) => Ok(n.clone()),
            _ => Err(h.new_error(e.id, "argument must be a simple name")),
        };
        let (v1, v2) = (name(a)?, name(b)?);
        if v1 == v2 {
            return Err(h.new_error(b.id, format!("duplicate variable name: {v1}")));
        }
        for (v, e) in [(&v1, a), (&v2, b)] {
            if v == ACCU || v == "__result__" {
                return Err(h.new_error(e.id, "iteration variable overwrites accumulator variable"));
            }
        }
        Ok((v1, v2))
    }
    #[allow(clippy::too_many_arguments)]
    fn fold(
        h: &mut Helper<'_>,
        range: IdedExpr,
        (v1, v2): (String, String),
        init: IdedExpr,
        cond: IdedExpr,
        step: IdedExpr,
        result: IdedExpr,
    ) -> IdedExpr {
        h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
            iter_range: range,
            iter_var: v1,
            iter_var2: Some(v2),
            accu_var: ACCU.to_string(),
            accu_init: init,
            loop_cond: cond,
            loop_step: step,
            result,
        })))
    }
    type Expand =
        fn(&mut Helper<'_>, IdedExpr, Vec<IdedExpr>) -> Result<IdedExpr, cel::parser::ParseError>;
    let all: Expand = |h, range, args| {
        let vs = vars(h, &args[0], &args[1])?;
        let pred = args.into_iter().nth(2).expect("three arguments");
        let init = lit(h, LiteralValue::Boolean(true.into()));
        let a = accu(h);
        let cond = call(h, operators::NOT_STRICTLY_FALSE, vec![a]);
        let a = accu(h);
        let step = call(h, operators::LOGICAL_AND, vec![a, pred]);
        let result = accu(h);
        Ok(fold(h, range, vs, init, cond, step, result))
    };
    let exists: Expand = |h, range, args| {
        let vs = vars(h, &args[0], &args[1])?;
        let pred = args.into_iter().nth(2).expect("three arguments");
        let init = lit(h, LiteralValue::Boolean(false.into()));
        let a = accu(h);
        let not = call(h, operators::LOGICAL_NOT, vec![a]);
        let cond = call(h, operators::NOT_STRICTLY_FALSE, vec![not]);
        let a = accu(h);
        let step = call(h, operators::LOGICAL_OR, vec![a, pred]);
        let result = accu(h);
        Ok(fold(h, range, vs, init, cond, step, result))
    };
    let exists_one: Expand = |h, range, args| {
        let vs = vars(h, &args[0], &args[1])?;
        let pred = args.into_iter().nth(2).expect("three arguments");
        let init = lit(h, LiteralValue::Int(0.into()));
        let cond = lit(h, LiteralValue::Boolean(true.into()));
        let (a, one) = (accu(h), lit(h, LiteralValue::Int(1.into())));
        let plus = call(h, operators::ADD, vec![a, one]);
        let a = accu(h);
        let step = call(h, operators::CONDITIONAL, vec![pred, plus, a]);
        let (a, one) = (accu(h), lit(h, LiteralValue::Int(1.into())));
        let result = call(h, operators::EQUALS, vec![a, one]);
        Ok(fold(h, range, vs, init, cond, step, result))
    };
    // transformList / transformMap / transformMapEntry, with an optional filter
    fn transform(
        h: &mut Helper<'_>,
        range: IdedExpr,
        args: Vec<IdedExpr>,
        kind: u8,
    ) -> Result<IdedExpr, cel::parser::ParseError> {
        let vs = vars(h, &args[0], &args[1])?;
        let mut rest = args.into_iter().skip(2).collect::<Vec<_>>();
        let transform = rest.pop().expect("a transform");
        let filter = rest.pop();
        let a = accu(h);
        let step = match kind {
            0 => {
                let item = h.next_expr(Expr::List(ListExpr {
                    elements: vec![transform],
                    optional_indices: Vec::new(),
                }));
                call(h, operators::ADD, vec![a, item])
            }
            1 => {
                let key = h.next_expr(Expr::Ident(vs.0.clone()));
                call(h, "cel.@mapInsert", vec![a, key, transform])
            }
            _ => call(h, "cel.@mapInsert", vec![a, transform]),
        };
        let step = match filter {
            Some(f) => {
                let a = accu(h);
                call(h, operators::CONDITIONAL, vec![f, step, a])
            }
            None => step,
        };
        let init = if kind == 0 {
            h.next_expr(Expr::List(ListExpr {
                elements: Vec::new(),
                optional_indices: Vec::new(),
            }))
        } else {
            h.next_expr(Expr::Map(MapExpr {
                entries: Vec::new(),
            }))
        };
        let cond = lit(h, LiteralValue::Boolean(true.into()));
        let result = accu(h);
        Ok(fold(h, range, vs, init, cond, step, result))
    }
    let transform_list: Expand = |h, range, args| transform(h, range, args, 0);
    let transform_map: Expand = |h, range, args| transform(h, range, args, 1);
    let transform_map_entry: Expand = |h, range, args| transform(h, range, args, 2);
    let macros: [(&str, usize, Expand); 9] = [
        ("all", 3, all),
        ("exists", 3, exists),
        ("existsOne", 3, exists_one),
        ("transformList", 3, transform_list),
        ("transformList", 4, transform_list),
        ("transformMap", 3, transform_map),
        ("transformMap", 4, transform_map),
        ("transformMapEntry", 3, transform_map_entry),
        ("transformMapEntry", 4, transform_map_entry),
    ];
    for (name, n, expand) in macros {
        env.add_macro(Macro::receiver(name, n, move |h, target, args| {
            let Some(range) = target.take() else {
                return Ok(None);
            };
            expand(h, range, std::mem::take(args)).map(Some)
        }))?;
    }
    env.add_overload(
        "cel.@mapInsert",
        "@mapInsert_map_key_value",
        vec![
            MAP_TYPE,
            cel::common::types::DYN_TYPE,
            cel::common::types::DYN_TYPE,
        ],
        map_insert,
    )?;
    env.add_overload(
        "cel.@mapInsert",
        "@mapInsert_map_map",
        vec![MAP_TYPE, MAP_TYPE],
        map_insert,
    )?;
    Ok(())
}

/// `cel.@mapInsert(map, key, value)` and `cel.@mapInsert(map, entries)`: cel-go's
/// `types.InsertMapKeyValue`, which refuses a key already there.
fn map_insert<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let mut entries: HashMap<CelMapKey<'v>, Box<dyn Val + 'v>> = HashMap::new();
    let mut insert = |k: &(dyn Val + 'v), v: Box<dyn Val + 'v>| -> Result<(), ExecutionError> {
        let key: CelMapKey<'v> = CowVal::Owned(k.clone_as_boxed()).try_into()?;
        if entries.contains_key(&key) {
            return Err(ExecutionError::function_error(
                "cel.@mapInsert",
                format!("insert failed: key {} already exists", cel_text(k)),
            ));
        }
        entries.insert(key, v);
        Ok(())
    };
    type Entries<'v> = Vec<(Box<dyn Val + 'v>, Box<dyn Val + 'v>)>;
    let pairs_of = |m: &(dyn Val + 'v)| -> Result<Entries<'v>, ExecutionError> {
        let (Some(it), Some(ix)) = (m.as_iterable(), m.as_indexer()) else {
            return Err(ExecutionError::UnexpectedType {
                got: m.get_type().name().to_owned(),
                want: "map".to_owned(),
            });
        };
        let mut out = Vec::new();
        let mut keys = it.iter();
        while let Some(k) = keys.next() {
            out.push((k.clone_as_boxed(), ix.get(k)?.into_owned()));
        }
        Ok(out)
    };
    match args.as_slice() {
        [m, k, v] => {
            for (pk, pv) in pairs_of(m.as_ref())? {
                insert(pk.as_ref(), pv)?;
            }
            insert(k.as_ref(), v.as_ref().clone_as_boxed())?;
        }
        [m, update] => {
            for (pk, pv) in pairs_of(m.as_ref())? {
                insert(pk.as_ref(), pv)?;
            }
            for (pk, pv) in pairs_of(update.as_ref())? {
                insert(pk.as_ref(), pv)?;
            }
        }
        _ => return Err(ExecutionError::invalid_argument_count(3, args.len())),
    }
    Ok(CowVal::owned(CelMap::from(entries)))
}

/// A key as cel-go prints it in "insert failed" (strings bare, as `%v` does).
fn cel_text(v: &dyn Val) -> String {
    if let Some(s) = v.downcast_ref::<CelString>() {
        return s.inner().to_string();
    }
    if let Some(i) = v.downcast_ref::<CelInt>() {
        return i64::from(*i).to_string();
    }
    if let Some(b) = v.downcast_ref::<CelBool>() {
        return b.inner().to_string();
    }
    format!("{v:?}")
}

// ---- cel-go's ext.Sets -----------------------------------------------------------------

/// The elements of a CEL list (also used by Kubernetes' lists library in `cellib`).
pub(crate) fn list_items<'a, 'v>(
    v: &'a (dyn Val + 'v),
) -> Result<Vec<&'a (dyn Val + 'v)>, ExecutionError> {
    let it = v
        .as_iterable()
        .ok_or_else(|| ExecutionError::UnexpectedType {
            got: v.get_type().name().to_owned(),
            want: "list".to_owned(),
        })?;
    let mut out = Vec::new();
    let mut items = it.iter();
    while let Some(x) = items.next() {
        out.push(x);
    }
    Ok(out)
}

fn two<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<(CowVal<'b, 'v>, CowVal<'b, 'v>), ExecutionError> {
    let mut it = args.into_iter();
    match (it.next(), it.next(), it.next()) {
        (Some(a), Some(b), None) => Ok((a, b)),
        _ => Err(ExecutionError::invalid_argument_count(2, 0)),
    }
}

fn contains_all(a: &[&dyn Val], b: &[&dyn Val]) -> bool {
    b.iter().all(|x| a.iter().any(|y| y.equals(*x)))
}

/// `sets.contains(list, sublist)`: every element of the second is in the first.
fn sets_contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two(args)?;
    let verdict = contains_all(&list_items(a.as_ref())?, &list_items(b.as_ref())?);
    Ok(CowVal::owned(CelBool::from(verdict)))
}

/// `sets.equivalent(a, b)`: each contains the other.
fn sets_equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two(args)?;
    let (x, y) = (list_items(a.as_ref())?, list_items(b.as_ref())?);
    Ok(CowVal::owned(CelBool::from(
        contains_all(&x, &y) && contains_all(&y, &x),
    )))
}

/// `sets.intersects(a, b)`: some element is in both.
fn sets_intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two(args)?;
    let (x, y) = (list_items(a.as_ref())?, list_items(b.as_ref())?);
    let verdict = x.iter().any(|p| y.iter().any(|q| p.equals(*q)));
    Ok(CowVal::owned(CelBool::from(verdict)))
}

// ---- Kubernetes' regex library (find, findAll) -----------------------------------------------

fn regex_of(pattern: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern)
        .map_err(|e| ExecutionError::function_error("find", format!("Illegal regex: {e}")))
}

fn re_find(
    s: &CelString<'_>,
    pattern: &CelString<'_>,
) -> Result<CelString<'static>, ExecutionError> {
    let re = regex_of(pattern.inner())?;
    Ok(CelString::from(
        re.find(s.inner())
            .map_or(String::new(), |m| m.as_str().to_string()),
    ))
}

fn find_all(s: &str, pattern: &str, n: i64) -> Result<CelList<'static>, ExecutionError> {
    let re = regex_of(pattern)?;
    let limit = if n < 0 { usize::MAX } else { n as usize };
    let found: Vec<Box<dyn Val>> = re
        .find_iter(s)
        .take(limit)
        .map(|m| Box::new(CelString::from(m.as_str().to_string())) as Box<dyn Val>)
        .collect();
    Ok(CelList::from(found))
}

fn re_find_all(
    s: &CelString<'_>,
    pattern: &CelString<'_>,
) -> Result<CelList<'static>, ExecutionError> {
    find_all(s.inner(), pattern.inner(), -1)
}

fn re_find_all_n(
    s: &CelString<'_>,
    pattern: &CelString<'_>,
    n: &CelInt,
) -> Result<CelList<'static>, ExecutionError> {
    find_all(s.inner(), pattern.inner(), i64::from(*n))
}

fn sets_library(env: &mut Env) -> Result<(), cel::DeclarationError> {
    cel::add_member_overload!(env, fn re_find: (CelString, CelString) -> Result<CelString>, name = "find")?;
    cel::add_member_overload!(env, fn re_find_all: (CelString, CelString) -> Result<CelList>, name = "findAll")?;
    cel::add_member_overload!(env, fn re_find_all_n: (CelString, CelString, CelInt) -> Result<CelList>, name = "findAll")?;
    use cel::common::types::LIST_TYPE;
    let lists = || vec![LIST_TYPE, LIST_TYPE];
    env.add_overload(
        "sets.contains",
        "list_sets_contains_list",
        lists(),
        sets_contains,
    )?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        lists(),
        sets_equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        lists(),
        sets_intersects,
    )?;
    Ok(())
}

fn build_env() -> Env {
    let mut env = Env::stdlib();
    env.add_extension(extensions::strings)
        .expect("the strings extension registers once");
    env.add_extension(extensions::lists)
        .expect("the lists extension registers once");
    env.add_extension(sets_library)
        .expect("the sets library registers once");
    env.add_type(QUANTITY_TYPE.to_owned())
        .expect("kubernetes.Quantity registers once");
    env.add_type(SEMVER_TYPE.to_owned())
        .expect("kubernetes.Semver registers once");
    env.add_extension(kubernetes_library)
        .expect("the Kubernetes library registers once");
    env.add_extension(super::cellib::register)
        .expect("the lists, IP, CIDR and URL libraries register once");
    env.add_extension(super::celformat::register)
        .expect("the format library registers once");
    env.add_extension(two_var_comprehensions)
        .expect("the two-variable comprehensions register once");
    env.set_error_on_duplicate_map_keys(false);
    env
}

// ---- the device variable ----------------------------------------------------------------

/// `device.attributes` / `device.capacity`: domain → identifier map, with an empty map
/// for a domain the device has nothing in.
#[derive(Debug, Clone, Default)]
struct DomainMap {
    domains: HashMap<String, CelMap<'static>>,
    empty: CelMap<'static>,
    /// The same domains as a plain map: iterating (`device.attributes.exists(d, ...)`)
    /// and `size()` see the domains the device has.
    full: CelMap<'static>,
}

impl Val for DomainMap {
    fn get_type(&self) -> &Type {
        &MAP_TYPE
    }
    fn cel_type() -> &'static Type {
        &MAP_TYPE
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }
    fn into_indexer<'v>(self: Box<Self>) -> Option<Box<dyn Indexer + 'v>>
    where
        Self: 'v,
    {
        Some(self)
    }
    fn as_container(&self) -> Option<&dyn Container> {
        Some(self)
    }
    fn as_iterable<'b, 'v>(&'b self) -> Option<&'b (dyn cel::common::traits::Iterable + 'v)>
    where
        Self: 'v,
    {
        self.full.as_iterable()
    }
    fn as_sizer(&self) -> Option<&dyn cel::common::traits::Sizer> {
        self.full.as_sizer()
    }
}

impl DomainMap {
    fn lookup(&self, idx: &dyn Val) -> Result<&CelMap<'static>, ExecutionError> {
        match idx.downcast_ref::<CelString>() {
            Some(s) => Ok(self.domains.get(s.inner()).unwrap_or(&self.empty)),
            None => Err(ExecutionError::UnexpectedType {
                got: idx.get_type().name().to_owned(),
                want: "string".to_owned(),
            }),
        }
    }
}

impl Indexer for DomainMap {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.lookup(idx)
            .map(|m| CowVal::Borrowed(m as &(dyn Val + 'v)))
    }
    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.lookup(idx).map(|m| m.clone_as_boxed())
    }
}

impl Container for DomainMap {
    fn contains(&self, value: &dyn Val) -> Result<bool, ExecutionError> {
        Ok(value
            .downcast_ref::<CelString>()
            .is_some_and(|s| self.domains.contains_key(s.inner())))
    }
}

/// Upstream `parseQualifiedName`: `domain/id`, or the driver's domain.
fn split_name<'a>(name: &'a str, driver: &'a str) -> (&'a str, &'a str) {
    match name.find('/') {
        Some(i) => (&name[..i], &name[i + 1..]),
        None => (driver, name),
    }
}

fn attribute_value(attr: &DeviceAttribute) -> Result<Box<dyn Val + 'static>, String> {
    if let Some(i) = attr.int {
        return Ok(Box::new(CelInt::from(i)));
    }
    if let Some(b) = attr.bool {
        return Ok(Box::new(CelBool::from(b)));
    }
    if let Some(s) = &attr.string {
        return Ok(Box::new(CelString::from(s.clone())));
    }
    if let Some(v) = &attr.version {
        return parse_semver_text(v)
            .map(|v| Box::new(CelSemver(v)) as Box<dyn Val>)
            .map_err(|e| format!("parse semantic version: {e}"));
    }
    Err("unsupported attribute value".to_string())
}

/// The `device` variable for one device of `driver`; errors are upstream's
/// ("attribute X: unsupported attribute value").
pub fn device_variable(driver: &str, device: &Device) -> Result<CelMap<'static>, String> {
    let mut attributes: HashMap<String, HashMap<CelMapKey<'static>, Box<dyn Val>>> = HashMap::new();
    for (name, attr) in &device.attributes {
        let value = attribute_value(attr).map_err(|e| format!("attribute {name}: {e}"))?;
        let (domain, id) = split_name(name, driver);
        attributes
            .entry(domain.to_string())
            .or_default()
            .insert(CelMapKey::from(id.to_string()), value);
    }
    let mut capacity: HashMap<String, HashMap<CelMapKey<'static>, Box<dyn Val>>> = HashMap::new();
    for (name, cap) in &device.capacity {
        let (domain, id) = split_name(name, driver);
        capacity.entry(domain.to_string()).or_default().insert(
            CelMapKey::from(id.to_string()),
            Box::new(CelQuantity(GoQuantity::Nanos(cap.value.nanos))),
        );
    }
    let domains = |m: HashMap<String, HashMap<CelMapKey<'static>, Box<dyn Val>>>| {
        let domains: HashMap<String, CelMap<'static>> =
            m.into_iter().map(|(k, v)| (k, CelMap::from(v))).collect();
        let full: HashMap<CelMapKey<'static>, Box<dyn Val>> = domains
            .iter()
            .map(|(k, v)| (CelMapKey::from(k.clone()), v.clone_as_boxed()))
            .collect();
        DomainMap {
            domains,
            empty: CelMap::default(),
            full: CelMap::from(full),
        }
    };
    let mut fields: HashMap<CelMapKey<'static>, Box<dyn Val>> = HashMap::new();
    fields.insert(
        CelMapKey::from("driver".to_string()),
        Box::new(CelString::from(driver.to_string())),
    );
    fields.insert(
        CelMapKey::from("allowMultipleAllocations".to_string()),
        Box::new(CelBool::from(
            device.allow_multiple_allocations.unwrap_or(false),
        )),
    );
    fields.insert(
        CelMapKey::from("attributes".to_string()),
        Box::new(domains(attributes)),
    );
    fields.insert(
        CelMapKey::from("capacity".to_string()),
        Box::new(domains(capacity)),
    );
    Ok(CelMap::from(fields))
}

// ---- compiled expressions -------------------------------------------------------------------

/// `resourceapi.CELSelectorExpressionMaxCost`: the runtime cost limit of a selector.
pub const CEL_SELECTOR_EXPRESSION_MAX_COST: u64 = 1_000_000;

/// cel-go's error when an evaluation passes its cost limit.
pub const COST_LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// One compiled selector, or why it did not compile.
pub struct Compiled {
    program: Result<Program, String>,
    /// The runtime cost limit ([`CEL_SELECTOR_EXPRESSION_MAX_COST`]).
    pub cost_limit: u64,
    /// Unique per expression (keys the results cache).
    pub id: usize,
}

impl Compiled {
    /// The compile error, as upstream's `CompilationResult.Error` prints.
    pub fn error(&self) -> Option<&str> {
        self.program.as_ref().err().map(String::as_str)
    }

    /// Whether the selector accepts the device; the error is upstream's runtime error
    /// text (without the "CEL runtime error" prefix the allocator adds).
    pub fn matches(&self, env: &Arc<Env>, device: &CelMap<'static>) -> Result<bool, String> {
        self.evaluate(env, device).0
    }

    /// [`Compiled::matches`] and the evaluation's actual cost, as cel-go's
    /// `EvalDetails.ActualCost` counts it (see `cel::cost`); past
    /// [`Compiled::cost_limit`] the evaluation fails as cel-go's does.
    pub fn evaluate(
        &self,
        env: &Arc<Env>,
        device: &CelMap<'static>,
    ) -> (Result<bool, String>, u64) {
        let program = match &self.program {
            Ok(p) => p,
            Err(e) => return (Err(e.clone()), 0),
        };
        let mut ctx = Context::with_env(env.clone());
        ctx.add_variable_as_val("device", device.clone_as_boxed());
        let (result, metered) =
            cel::cost::metered(self.cost_limit, Some(super::cellib::call_cost), || {
                program.execute(&ctx)
            });
        if metered.exceeded {
            return (Err(COST_LIMIT_EXCEEDED.to_string()), metered.cost);
        }
        let verdict = match result {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!(
                "CEL result of type {} could not be converted to bool",
                value_type_name(&other)
            )),
            // A Kubernetes value as the result: the crate cannot hand it out as a
            // `Value`; upstream's `ConvertToNative(bool)` fails with the type's words.
            Err(ExecutionError::UnexpectedType { got, want })
                if want.contains("representable as") && kubernetes_short_name(&got).is_some() =>
            {
                Err(format!(
                    "CEL result of type {got} could not be converted to bool: type conversion \
                     error from '{}' to 'bool'",
                    kubernetes_short_name(&got).unwrap_or_default()
                ))
            }
            Err(e) => Err(runtime_error_text(&e)),
        };
        (verdict, metered.cost)
    }
}

/// How apiserver/pkg/cel's types name themselves in their conversion errors.
fn kubernetes_short_name(type_name: &str) -> Option<&'static str> {
    Some(match type_name {
        "kubernetes.Quantity" => "Quantity",
        "kubernetes.Semver" => "Semver",
        "kubernetes.URL" => "URL",
        "net.IP" => "IP",
        "net.CIDR" => "CIDR",
        _ => return None,
    })
}

/// cel-go's wording of the runtime errors a device selector meets (the crate words
/// them its own way): a missing attribute is "no such key: <id>".
fn runtime_error_text(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::UndeclaredReference(name) => {
            format!("undeclared reference to '{name}' (in container '')")
        }
        // cel-go's dispatch of a declared function (`MaybeNoSuchOverload`) names the
        // call and the runtime types (a member call's target first); operators say less
        ExecutionError::NoSuchOverload(o) if !o.function().starts_with(['_', '!', '-', '@']) => {
            format!(
                "no such overload: {}({})",
                o.function(),
                o.argument_types().join(", ")
            )
        }
        ExecutionError::NoSuchOverload(_) => "no such overload".to_string(),
        ExecutionError::DivisionByZero(_) => "division by zero".to_string(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_string(),
        ExecutionError::IndexOutOfBounds(Value::Int(i)) => format!("index out of bounds: {i}"),
        ExecutionError::IndexOutOfBounds(Value::UInt(i)) => format!("index out of bounds: {i}"),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

fn value_type_name(v: &Value) -> &'static str {
    match v {
        Value::Int(_) => "int",
        Value::UInt(_) => "uint",
        Value::Float(_) => "double",
        Value::String(_) => "string",
        Value::Bytes(_) => "bytes",
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Null => "null_type",
        _ => "unknown",
    }
}

/// Parse, then check as cel-go does (upstream `CompileCELExpression`): parse and check
/// errors as "compilation failed: <issues>" in cel-go's format, a statically non-bool
/// result as upstream's own message.
pub fn compile_checked(env: &Env, expression: &str) -> Result<Program, String> {
    let program = match env.compile(expression) {
        Ok(p) => p,
        Err(errors) => {
            let text = errors
                .errors
                .iter()
                .map(|e| {
                    let line = e.pos.0.max(1) as usize;
                    let column = (e.pos.1 - 1).max(0) as usize;
                    super::celcheck::display_one(expression, line, column, &e.msg)
                })
                .collect::<Vec<_>>()
                .join("\n");
            return Err(format!("compilation failed: {text}"));
        }
    };
    let (ty, issues) = super::celcheck::check(program.expression());
    if !issues.is_empty() {
        let text = super::celcheck::display(expression, program.source_info(), &issues);
        return Err(format!("compilation failed: {text}"));
    }
    if let Some(e) = super::celcheck::result_error(&ty) {
        return Err(e);
    }
    Ok(program)
}

/// Compiled selectors by expression, shared by all allocations, and their results:
/// a selector's verdict on a device depends on nothing else, so it is computed once per
/// device (decoded slice object) and expression, not once per node and pod.
pub struct CelCache {
    pub env: Arc<Env>,
    compiled: Mutex<HashMap<String, Arc<Compiled>>>,
    results: Mutex<HashMap<(u64, usize, usize), bool>>,
}

/// Entries kept before the results cache starts over (slices that were replaced leave
/// entries behind).
const MAX_RESULTS: usize = 1 << 20;

impl Default for CelCache {
    fn default() -> Self {
        CelCache {
            env: Arc::new(build_env()),
            compiled: Mutex::new(HashMap::new()),
            results: Mutex::new(HashMap::new()),
        }
    }
}

impl CelCache {
    pub fn get_or_compile(&self, expression: &str) -> Arc<Compiled> {
        if let Some(c) = self
            .compiled
            .lock()
            .expect("CEL cache lock")
            .get(expression)
        {
            return c.clone();
        }
        let program = compile_checked(&self.env, expression);
        let mut compiled = self.compiled.lock().expect("CEL cache lock");
        let c = Arc::new(Compiled {
            program,
            cost_limit: CEL_SELECTOR_EXPRESSION_MAX_COST,
            id: compiled.len(),
        });
        compiled
            .entry(expression.to_string())
            .or_insert_with(|| c.clone())
            .clone()
    }

    /// The cached verdict of expression `expr` on device `device` of slice `slice`.
    pub fn cached(&self, slice: u64, device: usize, expr: usize) -> Option<bool> {
        self.results
            .lock()
            .expect("CEL results lock")
            .get(&(slice, device, expr))
            .copied()
    }

    pub fn remember(&self, slice: u64, device: usize, expr: usize, verdict: bool) {
        let mut r = self.results.lock().expect("CEL results lock");
        if r.len() >= MAX_RESULTS {
            r.clear();
        }
        r.insert((slice, device, expr), verdict);
    }
}

#[cfg(test)]
mod compile_tests {
    //! Upstream's `compile_test.go` table, for the stored-expressions environment with
    //! v1.36's default gates (DRAConsumableCapacity on, DRAListTypeAttributes off).
    //! Cases that need list attributes or the gated `includes` are not ported, nor the
    //! compile-time cost estimates (ksched does not estimate; the apiserver does when a
    //! claim or class is written). "expensive" checks the runtime cost limit.
    use super::*;

    enum Want {
        Match(bool),
        CompileError(&'static str),
        MatchError(&'static str),
    }

    fn run(name: &str, expr: &str, driver: &str, device: serde_json::Value, want: Want) {
        let cache = CelCache::default();
        let mut dev: Device = serde_json::from_value(device).expect("device");
        dev.name = "d".into();
        let compiled = cache.get_or_compile(expr);
        match want {
            Want::CompileError(text) => {
                let err = compiled
                    .error()
                    .unwrap_or_else(|| panic!("{name}: compiled"));
                assert!(err.contains(text), "{name}: {err}");
            }
            Want::Match(m) => {
                assert_eq!(compiled.error(), None, "{name}");
                let var = device_variable(driver, &dev).expect("variable");
                assert_eq!(compiled.matches(&cache.env, &var), Ok(m), "{name}");
            }
            Want::MatchError(text) => {
                assert_eq!(compiled.error(), None, "{name}");
                let err = match device_variable(driver, &dev) {
                    Ok(var) => compiled.matches(&cache.env, &var).unwrap_err(),
                    Err(e) => e,
                };
                assert!(err.contains(text), "{name}: {err}");
            }
        }
    }

    #[test]
    fn upstream_table() {
        use serde_json::json;
        use Want::*;
        let none = || json!({"name": "d"});
        let attrs = |a: serde_json::Value| json!({"name": "d", "attributes": a});
        let caps = |c: serde_json::Value| json!({"name": "d", "capacity": c});
        let d = "dra.example.com";
        let cases: Vec<(&str, &str, &str, serde_json::Value, Want)> = vec![
            ("true", "true", "", none(), Match(true)),
            ("false", "false", "", none(), Match(false)),
            ("syntax-error", "?!", "", none(), CompileError("Syntax error")),
            ("type-error", "1", "", none(), CompileError("must evaluate to bool or the unknown type, not int")),
            (
                "runtime-error-lookup-identifier",
                r#"device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))"#,
                "", none(), MatchError("no such key: noSuchAttr"),
            ),
            (
                "runtime-error-lookup-map",
                r#"device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))"#,
                "", none(), MatchError("no such key: noSuchAttr"),
            ),
            ("domain-check-negative", r#""no-such-domain" in device.attributes"#, "", none(), Match(false)),
            (
                "domain-check-positive", r#""dra.example.com" in device.attributes"#, "",
                attrs(json!({"dra.example.com/something": {"bool": true}})), Match(true),
            ),
            ("empty-driver-name", r#"device.driver == """#, "", none(), Match(true)),
            ("real-driver-name", r#"device.driver == "dra.example.com""#, d, none(), Match(true)),
            (
                "driver-name-qualifier", r#"device.attributes["dra.example.com"].name"#, d,
                attrs(json!({"name": {"bool": true}})), Match(true),
            ),
            (
                "driver-name-qualifier-map-lookup", r#"device.attributes["dra.example.com"]["name"]"#, d,
                attrs(json!({"name": {"bool": true}})), Match(true),
            ),
            (
                "bind", r#"cel.bind(dra, device.attributes["dra.example.com"], dra.name)"#, d,
                attrs(json!({"name": {"bool": true}})), Match(true),
            ),
            (
                "qualified-attribute-name", r#"device.attributes["other.example.com"].name"#, d,
                attrs(json!({"other.example.com/name": {"bool": true}})), Match(true),
            ),
            (
                "int", r#"device.attributes["dra.example.com"].name > 0"#, d,
                attrs(json!({"name": {"int": 1}})), Match(true),
            ),
            (
                "string", r#"device.attributes["dra.example.com"].name == "fish""#, d,
                attrs(json!({"name": {"string": "fish"}})), Match(true),
            ),
            (
                "attribute-access-causes-match-error", r#"device.attributes["dra.example.com"].names"#, d,
                attrs(json!({"names": {"strings": ["fish", "bird"]}})),
                MatchError("attribute names: unsupported attribute value"),
            ),
            (
                "includes-function-undeclared-error", r#"device.attributes["dra.example.com"].name.includes("fish")"#, d,
                none(), CompileError("undeclared reference to 'includes'"),
            ),
            (
                "version", r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))"#, d,
                attrs(json!({"name": {"version": "1.0.0"}})), Match(true),
            ),
            (
                "version_v",
                r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)"#,
                d, attrs(json!({"name": {"version": "1.0.0"}})), Match(true),
            ),
            (
                "quantity", r#"device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#, d,
                caps(json!({"name": {"value": "1Mi"}})), Match(true),
            ),
            (
                "check-positive",
                r#""name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
                d, caps(json!({"name": {"value": "1Mi"}})), Match(true),
            ),
            (
                "check-negative",
                r#"!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
                "", none(), Match(true),
            ),
            (
                "all",
                r#"
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"#,
                d,
                json!({"name": "d",
                    "attributes": {"bool": {"bool": true}, "int": {"int": 1}, "string": {"string": "fish"}, "version": {"version": "1.0.0"}},
                    "capacity": {"quantity": {"value": "1Mi"}}}),
                Match(true),
            ),
            (
                "many",
                r#"device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && device.attributes["dra.example.com"].c"#,
                d, attrs(json!({"a": {"bool": true}, "b": {"bool": true}, "c": {"bool": true}})), Match(true),
            ),
            (
                "check_attribute_domains", r#"device.attributes.exists_one(x, x == "dra.example.com")"#, d,
                attrs(json!({"services": {"string": "some_example_value"}})), Match(true),
            ),
            (
                "check_attribute_ids", r#"device.attributes["dra.example.com"].exists_one(x, x == "services")"#, d,
                attrs(json!({"services": {"string": "some_example_value"}})), Match(true),
            ),
            (
                "split_attribute", r#"device.attributes["dra.example.com"].services.split("example").size() >= 2"#, d,
                attrs(json!({"services": {"string": "some_example_value"}})), Match(true),
            ),
            (
                "regexp_attribute", r#"device.attributes["dra.example.com"].services.matches("[^a]?sym")"#, d,
                attrs(json!({"services": {"string": "asymetric"}})), Match(true),
            ),
            (
                "check_capacity_domains", r#"device.capacity.exists_one(x, x == "dra.example.com")"#, d,
                caps(json!({"memory": {"value": "1Mi"}})), Match(true),
            ),
            (
                "check_capacity_ids", r#"device.capacity["dra.example.com"].exists_one(x, x == "memory")"#, d,
                caps(json!({"memory": {"value": "1Mi"}})), Match(true),
            ),
            (
                "allow_multiple_allocations", "device.allowMultipleAllocations == true", d,
                json!({"name": "d", "allowMultipleAllocations": true}), Match(true),
            ),
            ("allow_multiple_allocations_default", "device.allowMultipleAllocations == false", d, none(), Match(true)),
            (
                "expensive",
                "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))",
                d,
                json!({"name": "d", "attributes": (0..32).map(|i| {
                    let suffix = format!("-{i}");
                    (format!("dra.example.com/{}{suffix}", "x".repeat(32 - suffix.len())), json!({"string": "abc"}))
                }).collect::<serde_json::Map<String, serde_json::Value>>()}),
                MatchError("actual cost limit exceeded"),
            ),
            // ksched's own: the checker's errors in cel-go's words and form.
            (
                "undeclared-variable", "device.driver == other", "", none(),
                CompileError("compilation failed: ERROR: <input>:1:18: undeclared reference to 'other' (in container '')\n | device.driver == other\n | .................^"),
            ),
            (
                "undefined-field", "device.drivr == \"x\"", "", none(),
                CompileError("ERROR: <input>:1:7: undefined field 'drivr'"),
            ),
            (
                "no-matching-overload", "device.driver == 1", "", none(),
                CompileError("found no matching overload for '_==_' applied to '(string, int)'"),
            ),
            ("string-result", "device.driver", "", none(), CompileError("must evaluate to bool or the unknown type, not string")),
            (
                "math-is-not-declared", "math.greatest(1, 2) > 0", "", none(),
                CompileError("ERROR: <input>:1:1: undeclared reference to 'math' (in container '')\n | math.greatest(1, 2) > 0\n | ^\nERROR: <input>:1:14: undeclared reference to 'greatest' (in container '')"),
            ),
            ("sets", "sets.contains([1, 2, 3], [2, 3]) && !sets.intersects([1], [2])", "", none(), Match(true)),
            (
                "regex-find", r#"device.attributes["dra.example.com"].services.find("[a-z]+") == "some" && "a1b22".findAll("[0-9]+") == ["1", "22"]"#,
                d, attrs(json!({"services": {"string": "some_example_value"}})), Match(true),
            ),
        ];
        for (name, expr, driver, device, want) in cases {
            run(name, expr, driver, device, want);
        }
    }
}

#[cfg(test)]
mod upstream_golden {
    //! `testdata/cel_upstream.jsonl`: expressions evaluated by upstream's own code
    //! (`k8s.io/dynamic-resource-allocation/cel` v0.36.5 on cel-go v0.26.0, through
    //! `CompileCELExpression` and `DeviceMatches`, with `hack/celcost/main.go`), each
    //! with its actual cost and its verdict or error. ksched must agree on all three.
    //! `testdata/cel_upstream_library.jsonl`: the expressions of the apiserver's library
    //! tests (`k8s.io/apiserver/pkg/cel/library` `ip_test.go`, `cidr_test.go`,
    //! `quantity_test.go`, `semver_test.go`, `cost_test.go`), each as written when it
    //! is a bool and as `(e) == (e)` to make any result a selector, evaluated the same
    //! way in the DRA environment (the authorizer library's, which needs variables a
    //! selector has not, are left out).
    use super::*;

    #[derive(serde::Deserialize)]
    struct Case {
        expr: String,
        driver: String,
        attributes: serde_json::Value,
        capacity: HashMap<String, String>,
        cost: Option<u64>,
        #[serde(rename = "match")]
        verdict: Option<bool>,
        error: Option<String>,
        compile_error: Option<String>,
    }

    /// What ksched does not match yet (see the module docstring), by a fragment of the
    /// expressions it shows in; every other case must agree.
    const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
        (
            "x'.format",
            "parse errors: cel-go's ANTLR listener says 'expecting <EOF>' where the crate lists every expected token",
        ),
        (
            "\"%d\".format([dyn(",
            "runtime format errors: upstream's strings library version 2 formats with cel-go's first formatter (\"decimal clause can only be used on integers\"), the crate's with the newer one",
        ),
    ];

    #[test]
    fn costs_verdicts_and_errors_match_upstream() {
        let data = [
            include_str!("testdata/cel_upstream.jsonl"),
            include_str!("testdata/cel_upstream_library.jsonl"),
        ]
        .concat();
        let cache = CelCache::default();
        let mut failures = Vec::new();
        for line in data.lines().filter(|l| !l.trim().is_empty()) {
            let case: Case = serde_json::from_str(line).expect("golden case");
            let capacity: serde_json::Map<String, serde_json::Value> = case
                .capacity
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::json!({ "value": v })))
                .collect();
            let device: Device = serde_json::from_value(serde_json::json!({
                "name": "d", "attributes": case.attributes, "capacity": capacity,
            }))
            .expect("device");
            if KNOWN_DIFFERENCES.iter().any(|(e, _)| case.expr.contains(e)) {
                continue;
            }
            let compiled = cache.get_or_compile(&case.expr);
            if let Some(want) = &case.compile_error {
                match compiled.error() {
                    Some(got) if got == want => {}
                    got => failures.push(format!(
                        "{}: compile error {got:?}, want {want:?}",
                        case.expr
                    )),
                }
                continue;
            }
            if let Some(err) = compiled.error() {
                failures.push(format!("{}: unexpected compile error {err}", case.expr));
                continue;
            }
            let var = device_variable(&case.driver, &device).expect("variable");
            let (got, cost) = compiled.evaluate(&cache.env, &var);
            let want = match (&case.verdict, &case.error) {
                (Some(v), _) => Ok(*v),
                (None, Some(e)) => Err(e.clone()),
                (None, None) => panic!("{}: golden case without outcome", case.expr),
            };
            if got != want {
                failures.push(format!("{}: got {got:?}, want {want:?}", case.expr));
            }
            if Some(cost) != case.cost {
                failures.push(format!("{}: cost {cost}, want {:?}", case.expr, case.cost));
            }
        }
        assert!(
            failures.is_empty(),
            "{} disagreements:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::dynamic_resources::api::DeviceCapacity;

    fn device() -> Device {
        let mut d = Device {
            name: "gpu-0".into(),
            ..Device::default()
        };
        d.attributes.insert(
            "model".into(),
            DeviceAttribute {
                string: Some("a100".into()),
                ..Default::default()
            },
        );
        d.attributes.insert(
            "driverVersion".into(),
            DeviceAttribute {
                version: Some("1.2.3".into()),
                ..Default::default()
            },
        );
        d.attributes.insert(
            "other.example.com/numa".into(),
            DeviceAttribute {
                int: Some(1),
                ..Default::default()
            },
        );
        d.capacity.insert(
            "memory".into(),
            DeviceCapacity {
                value: Quantity::parse("40Gi").unwrap(),
                request_policy: None,
            },
        );
        d
    }

    #[test]
    fn selectors_see_the_device() {
        let cache = CelCache::default();
        let dev = device_variable("gpu.example.com", &device()).unwrap();
        let cases = [
            ("device.driver == 'gpu.example.com'", Ok(true)),
            (
                "device.attributes['gpu.example.com'].model == 'a100'",
                Ok(true),
            ),
            ("device.attributes['other.example.com'].numa == 1", Ok(true)),
            (
                "device.capacity['gpu.example.com'].memory.compareTo(quantity('32Gi')) >= 0",
                Ok(true),
            ),
            (
                "device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('64Gi'))",
                Ok(false),
            ),
            (
                "device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('1.0.0'))",
                Ok(true),
            ),
            ("has(device.attributes['none.example.com'].x)", Ok(false)),
            ("'gpu.example.com' in device.attributes", Ok(true)),
            (
                "cel.bind(dra, device.attributes['gpu.example.com'], dra.model == 'a100')",
                Ok(true),
            ),
            ("device.allowMultipleAllocations", Ok(false)),
        ];
        for (expr, want) in cases {
            let c = cache.get_or_compile(expr);
            assert_eq!(c.error(), None, "{expr}");
            assert_eq!(c.matches(&cache.env, &dev), want, "{expr}");
        }
        let missing = cache.get_or_compile("device.attributes['none.example.com'].x == 1");
        assert!(missing.matches(&cache.env, &dev).unwrap_err().contains("x"));
        assert!(cache.get_or_compile("device.driver ==").error().is_some());
    }
}
