//! Runtime cost metering, cel-go's `interpreter.CostTracker` (ksched's patch to cel 0.15).
//!
//! cel-go charges every evaluation step as its cost observer sees it
//! (`interpreter/runtimecost.go`): an identifier or the start of an attribute path 1,
//! each select or index qualifier 1, a constant 0, a list literal 10 and a map literal
//! 30 (0 when every element is constant: `OptOptimize` builds them once), `&&`, `||` and
//! `?:` nothing of their own, and every other function or operator what its overload
//! costs. A call's cost is looked up as cel-go does: the extension libraries' overload
//! trackers (cel-go `ext.Lists`, `ext.Sets`), then the embedder's estimator
//! ([`CallCost`], Kubernetes' `library.CostEstimator.CallCost` for ksched), then cel-go's
//! defaults (`costCall`: string sizes for comparisons, concatenation, `matches`,
//! `contains`, `startsWith`; the list size for `in`; 1 otherwise).
//!
//! The meter is a thread-local counter, armed by [`metered`] around one evaluation:
//! nothing is allocated per step, and an evaluation that is not metered pays one
//! thread-local read per step. Once the counter passes the limit, every further step
//! fails with [`ExecutionError::CostLimitExceeded`] (cel-go panics out of the
//! evaluation), and [`metered`] reports the excess even when an operator such as `||`
//! absorbed the error.

use std::cell::Cell;

use crate::common::ast::{Expr, IdedExpr};
use crate::common::types::{CelInt, CelString, Kind};
use crate::common::value::{CowVal, Val};
use crate::ExecutionError;

/// The embedder's cost estimator: the cost of `function` applied to `args` (the target
/// first for a member call). `result` is `None` on the first ask, before the call; an
/// estimator whose cost depends on the result answers `None` then and is asked again
/// with the result. `None` in the end leaves the call to cel-go's defaults.
pub type CallCost = fn(function: &str, args: &[&dyn Val], result: Option<&dyn Val>) -> Option<u64>;

#[derive(Clone, Copy)]
struct State {
    active: bool,
    exceeded: bool,
    cost: u64,
    limit: u64,
    estimator: Option<CallCost>,
}

const IDLE: State = State {
    active: false,
    exceeded: false,
    cost: 0,
    limit: u64::MAX,
    estimator: None,
};

thread_local! {
    static METER: Cell<State> = const { Cell::new(IDLE) };
}

/// The outcome of a metered evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metered {
    /// The actual cost, as cel-go's `EvalDetails.ActualCost`.
    pub cost: u64,
    /// Whether the cost passed the limit (cel-go: "operation cancelled: actual cost
    /// limit exceeded").
    pub exceeded: bool,
}

/// Runs `f` (an evaluation) with the meter armed at `limit`.
pub fn metered<R>(limit: u64, estimator: Option<CallCost>, f: impl FnOnce() -> R) -> (R, Metered) {
    let saved = METER.with(|m| {
        m.replace(State {
            active: true,
            exceeded: false,
            cost: 0,
            limit,
            estimator,
        })
    });
    let result = f();
    let end = METER.with(|m| m.replace(saved));
    (
        result,
        Metered {
            cost: end.cost,
            exceeded: end.exceeded,
        },
    )
}

/// Adds `n` to the running cost.
#[inline]
pub(crate) fn charge(n: u64) -> Result<(), ExecutionError> {
    METER.with(|m| {
        let mut s = m.get();
        if !s.active {
            return Ok(());
        }
        if s.exceeded {
            // cel-go stops at the step that passed the limit: its cost is the last
            return Err(ExecutionError::CostLimitExceeded);
        }
        s.cost = s.cost.saturating_add(n);
        if s.cost > s.limit {
            s.exceeded = true;
        }
        m.set(s);
        if s.exceeded {
            Err(ExecutionError::CostLimitExceeded)
        } else {
            Ok(())
        }
    })
}

/// Takes back `n`: a ternary's branch that is an attribute path is resolved by cel-go's
/// conditional attribute directly, without the observed step that charges its start.
#[inline]
pub(crate) fn refund(n: u64) {
    METER.with(|m| {
        let mut s = m.get();
        if s.active && !s.exceeded {
            s.cost = s.cost.saturating_sub(n);
            m.set(s);
        }
    })
}

#[inline]
pub(crate) fn active() -> bool {
    METER.with(|m| m.get().active)
}

/// Whether `expr` is a constant in cel-go's plan: a literal, a list or map of constants
/// (`maybeBuildListLiteral`, `maybeBuildMapLiteral`) or a type conversion of a constant
/// (`maybeOptimizeConstUnary`).
pub(crate) fn is_constant(expr: &IdedExpr) -> bool {
    match &expr.expr {
        Expr::Literal(_) => true,
        Expr::List(list) => list.optional_indices.is_empty() && list.elements.iter().all(is_constant),
        Expr::Map(map) => map.entries.iter().all(|e| match &e.expr {
            crate::common::ast::EntryExpr::MapEntry(e) => {
                !e.optional && is_constant(&e.key) && is_constant(&e.value)
            }
            crate::common::ast::EntryExpr::StructField(_) => false,
        }),
        Expr::Call(call) => {
            call.target.is_none()
                && call.args.len() == 1
                && matches!(
                    call.func_name.as_str(),
                    "bool" | "bytes" | "double" | "duration" | "dyn" | "int" | "string" | "timestamp"
                        | "type" | "uint"
                )
                && is_constant(&call.args[0])
        }
        _ => false,
    }
}

/// Whether `expr` extends an attribute path (an identifier, select or index), so a
/// select or index on it is one more qualifier of the same attribute; on anything
/// else it starts a relative attribute, which costs 1 more.
pub(crate) fn is_attribute(expr: &IdedExpr) -> bool {
    match &expr.expr {
        Expr::Ident(_) => true,
        Expr::Select(s) => !s.test,
        Expr::Call(c) => {
            c.target.is_none()
                && c.args.len() == 2
                && (c.func_name == crate::common::ast::operators::INDEX
                    || c.func_name == crate::common::ast::operators::OPT_INDEX
                    || c.func_name == crate::common::ast::operators::OPT_SELECT)
        }
        _ => false,
    }
}

/// cel-go's `actualSize`: a string's length in code points, a list's or map's number of
/// entries, an optional's value's size, 1 for anything else.
pub fn actual_size(v: &dyn Val) -> u64 {
    if let Some(s) = v.downcast_ref::<CelString>() {
        return s.inner().chars().count() as u64;
    }
    if let Some(opt) = v.downcast_ref::<crate::common::types::CelOptional>() {
        if let Some(inner) = opt.inner() {
            return actual_size(inner);
        }
        return 1;
    }
    match v.as_sizer() {
        Some(s) => i64::from(s.size()).max(0) as u64,
        None => 1,
    }
}

const STRING_TRAVERSAL: f64 = 0.1;
const REGEX_LENGTH: f64 = 0.25;

fn ceil_factor(size: u64, factor: f64) -> u64 {
    (size as f64 * factor).ceil() as u64
}

fn is_string_like(v: &dyn Val) -> bool {
    v.downcast_ref::<CelString>().is_some()
        || v.downcast_ref::<crate::common::types::CelBytes>().is_some()
}

fn is_list_val(v: &dyn Val) -> bool {
    v.get_type().kind() == Kind::List
}

/// cel-go ext's `trackAllocatingListCall`.
fn allocating_list(factor: f64, size: u64) -> u64 {
    (size as f64 * factor) as u64 + 1 + 10
}

/// cel-go ext's `trackListSelfCompare`.
fn self_compare(list: &dyn Val) -> u64 {
    let size = actual_size(list);
    let mut factor = 2.0;
    if size > 0 {
        let first = list.as_iterable().and_then(|it| it.iter().next());
        if first.is_some_and(is_string_like) {
            factor += STRING_TRAVERSAL;
        }
    }
    allocating_list(factor, size * size)
}

/// The overload trackers of cel-go's `ext.Lists` (version 3) and `ext.Sets`, which take
/// precedence over the estimator. `Some(None)`: the cost depends on the result.
fn ext_tracker(function: &str, args: &[&dyn Val]) -> Option<Option<u64>> {
    let is_list = |i: usize| args.get(i).is_some_and(|a| is_list_val(*a));
    match function {
        "slice" | "reverse" if is_list(0) => Some(None),
        "lists.range" => Some(None),
        "flatten" if is_list(0) => {
            let depth = match args.get(1).and_then(|d| d.downcast_ref::<CelInt>()) {
                Some(d) => i64::from(*d) as f64,
                None => 1.0,
            };
            Some(Some(allocating_list(depth, actual_size(args[0]))))
        }
        "distinct" | "sort" if is_list(0) => Some(Some(self_compare(args[0]))),
        "@sortByAssociatedKeys" if is_list(1) => Some(Some(self_compare(args[1]))),
        "sets.contains" | "sets.intersects" | "sets.equivalent" if args.len() == 2 => {
            let factor = if function == "sets.equivalent" { 2.0 } else { 1.0 };
            Some(Some(
                1 + ((actual_size(args[0]) * actual_size(args[1])) as f64 * factor) as u64,
            ))
        }
        _ => None,
    }
}

/// cel-go's `costCall` defaults, by overload.
fn default_cost(function: &str, args: &[&dyn Val]) -> u64 {
    use crate::common::ast::operators as op;
    let string_args = args.len() == 2 && is_string_like(args[0]) && is_string_like(args[1]);
    match function {
        "startsWith" | "endsWith" if string_args => ceil_factor(actual_size(args[0]), STRING_TRAVERSAL),
        "bytes" | "string" | "format" | "strings.quote"
            if args.len() == 1 || function == "format" =>
        {
            // string_to_bytes, bytes_to_string, ext quote and format: O(size of the first).
            let a = args[0];
            let applies = match function {
                "bytes" => a.downcast_ref::<CelString>().is_some(),
                "string" => a.downcast_ref::<crate::common::types::CelBytes>().is_some(),
                _ => a.downcast_ref::<CelString>().is_some(),
            };
            if applies {
                ceil_factor(actual_size(a), STRING_TRAVERSAL)
            } else {
                1
            }
        }
        op::IN if args.len() == 2 && is_list_val(args[1]) => actual_size(args[1]),
        op::LESS | op::GREATER | op::LESS_EQUALS | op::GREATER_EQUALS if string_args => {
            ceil_factor(actual_size(args[0]).min(actual_size(args[1])), STRING_TRAVERSAL)
        }
        op::EQUALS | op::NOT_EQUALS if args.len() == 2 => {
            ceil_factor(actual_size(args[0]).min(actual_size(args[1])), STRING_TRAVERSAL)
        }
        op::ADD if string_args => {
            ceil_factor(actual_size(args[0]) + actual_size(args[1]), STRING_TRAVERSAL)
        }
        "matches" if string_args => {
            let s = ((1.0 + actual_size(args[0]) as f64) * STRING_TRAVERSAL).ceil() as u64;
            s * ceil_factor(actual_size(args[1]), REGEX_LENGTH)
        }
        "contains" if string_args => {
            ceil_factor(actual_size(args[0]), STRING_TRAVERSAL)
                * ceil_factor(actual_size(args[1]), STRING_TRAVERSAL)
        }
        _ => 1,
    }
}

/// A pending call charge: what is known before the call, and whether the result must
/// be seen first.
pub(crate) enum Pending {
    Done,
    AfterResult,
}

fn estimator() -> Option<CallCost> {
    METER.with(|m| m.get().estimator)
}

/// Charges a call before it runs. Returns whether the charge waits for the result.
pub(crate) fn charge_call(function: &str, args: &[&dyn Val]) -> Result<Pending, ExecutionError> {
    if !active() {
        return Ok(Pending::Done);
    }
    let cost = match ext_tracker(function, args) {
        Some(Some(c)) => c,
        Some(None) => return Ok(Pending::AfterResult),
        None => match estimator().map(|e| e(function, args, None)) {
            Some(Some(c)) => c,
            _ if estimator().is_some() && result_dependent(function) => return Ok(Pending::AfterResult),
            _ => default_cost(function, args),
        },
    };
    charge(cost).map(|()| Pending::Done)
}

/// Functions whose Kubernetes cost is a function of the result (`join`) or whose ext
/// tracker is (`slice`, `reverse`, `lists.range`).
fn result_dependent(function: &str) -> bool {
    function == "join"
}

/// Charges a call whose cost depends on its `result`.
pub(crate) fn charge_result(function: &str, result: &dyn Val) -> Result<(), ExecutionError> {
    let cost = match function {
        "slice" | "reverse" | "lists.range" => allocating_list(1.0, actual_size(result)),
        _ => match estimator().and_then(|e| e(function, &[], Some(result))) {
            Some(c) => c,
            None => 1,
        },
    };
    charge(cost)
}

/// Charges `function` applied to the `CowVal` arguments of the interpreter.
#[inline]
pub(crate) fn charge_call_vals(
    function: &str,
    args: &[CowVal<'_, '_>],
) -> Result<Pending, ExecutionError> {
    if !active() {
        return Ok(Pending::Done);
    }
    match args {
        [] => charge_call(function, &[]),
        [a] => charge_call(function, &[a.as_ref()]),
        [a, b] => charge_call(function, &[a.as_ref(), b.as_ref()]),
        [a, b, c] => charge_call(function, &[a.as_ref(), b.as_ref(), c.as_ref()]),
        [a, b, c, d] => charge_call(function, &[a.as_ref(), b.as_ref(), c.as_ref(), d.as_ref()]),
        more => {
            let refs: Vec<&dyn Val> = more.iter().map(|a| a.as_ref()).collect();
            charge_call(function, &refs)
        }
    }
}
