//! DefaultPreemption's dry run over the snapshot: which lower-priority pods to evict on
//! which node (upstream `DryRunPreemption`, `SelectVictimsOnNode`,
//! `filterPodsWithPDBViolation` and `pickOneNodeForPreemption`).
//!
//! For each potential node, from an offset, until enough candidates are found:
//!
//! 1. every pod of lower priority than the preemptor is a potential victim; none means
//!    "No preemption victims found for incoming pod" (UnschedulableAndUnresolvable);
//! 2. the pod must pass every Filter with all of them gone (nominated pods of equal or
//!    higher priority counted), else the node gets that Filter's status;
//! 3. the potential victims, most important first (higher priority, then earlier start),
//!    PDB-violating ones first, are reprieved one by one: a pod stays a victim only when
//!    adding it back makes the preemptor not fit.
//!
//! Two ways to evaluate "the node without these pods", with the same results:
//!
//! * **arithmetic** — when the only Filters that can reject this pod and look at the
//!   node's pods are NodeResourcesFit and the nominated pods' room (no host ports, no
//!   hard topology spreading, no inter-pod affinity in play), a node without some pods
//!   is the node with their requests freed (`fit::Freed`); the snapshot is not touched,
//!   so this costs a few additions per step;
//! * **detach and re-attach** — otherwise the pods are really taken off the snapshot and
//!   the PreFilter state is recomputed for every step (what upstream's RemovePod/AddPod
//!   extensions keep up to date), then every record is put back.
//!
//! Deviations from upstream: nodes are examined one after another from the offset, so
//! the candidates are the first ones found in that order (upstream's parallel search
//! may find another set of the same size); ties between equally important pods are
//! broken by uid, and ties between equally good candidates go to the first one found.

use std::sync::Arc;

use ahash::AHashSet;
use pyo3::prelude::*;
use rayon::prelude::*;

use crate::cycle::{Evals, FilterTally, PodState};
use crate::plugins::dynamic_resources::DraFilter;
use crate::plugins::node_resources_fit::Freed;
use crate::plugins::pod_topology_spread as pts;
use crate::plugins::volume_restrictions::{self, RestrictionsState};
use crate::plugins::{Plugin, Reject, DETAIL_ERROR, DETAIL_NOT_IN_PREFILTER_RESULT};
use crate::pod::CompiledPod;
use crate::profile::Profile;
use crate::selector::Selector;
use crate::snapshot::{PodRecord, Snapshot};

pub const ERR_NO_VICTIMS: &str = "No preemption victims found for incoming pod";
/// Nodes evaluated per step of the arithmetic dry run.
const WAVE: usize = 512;
/// Waves at least this large are evaluated in parallel, in chunks of `PARALLEL_CHUNK`.
const PARALLEL_MIN_WAVE: usize = 256;
const PARALLEL_CHUNK: usize = 128;
/// `MaxInt32 + 1`, added to every victim's priority before summing (upstream).
const PRIORITY_OFFSET: i64 = 1 << 31;

/// What the pods of one slot below a priority would free, remembered while the slot's
/// pods stay the same (`Snapshot::slot_gen`): most nodes a dry run examines were
/// examined by the previous preemptor too, and most are ruled out by this alone.
#[derive(Clone, Debug, Default)]
pub struct LowerPods {
    /// `slot_gen + 1` when filled (0: empty).
    stamp: u64,
    priority: i32,
    count: usize,
    freed: Freed,
}

/// Per-thread buffers of the arithmetic dry run (one node's pods and freed room).
#[derive(Default)]
struct Scratch {
    pods: Vec<u32>,
    freed: Freed,
    /// A memo computed for the node just evaluated, for the caller to keep (boxed: the
    /// wave's results stay small, and misses are rare once the memo is warm).
    memo: Option<Box<LowerPods>>,
}

/// One node's outcome in a wave, with the memo to keep for it.
type Evaluated = (
    u32,
    Result<Candidate, NotCandidate>,
    Option<Box<LowerPods>>,
    FilterTally,
);

/// What the dry run reads of a `policy/v1` PodDisruptionBudget.
#[derive(Debug)]
pub struct Pdb {
    pub namespace: u32,
    /// `None`: a nil, empty or invalid selector, which matches nothing here.
    pub selector: Option<Selector>,
    pub disruptions_allowed: i64,
    /// Names of the pods in `status.disruptedPods`.
    pub disrupted: AHashSet<String>,
}

/// A victim as ranking reads it.
#[derive(Clone, Debug)]
pub struct Victim {
    pub uid: Arc<str>,
    pub priority: i32,
    /// Start time in seconds (`now` for a pod that has not started).
    pub start: f64,
}

/// A node where the preemptor fits once `victims` (most important first) are gone.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub node: Arc<str>,
    pub victims: Vec<Victim>,
    pub num_pdb_violations: usize,
}

/// Why a potential node is no candidate.
#[derive(Debug)]
pub enum NotCandidate {
    Rejected(Reject),
    NoVictims,
    Error(String),
}

/// The outcome of one dry run.
#[derive(Debug, Default)]
pub struct DryRun {
    /// Non-violating candidates first, each group in the order found.
    pub candidates: Vec<Candidate>,
    /// `(node, why)` of the nodes examined that are no candidate.
    pub rejected: Vec<(u32, NotCandidate)>,
    pub examined: usize,
    /// The Filter evaluations of the nodes examined (each of upstream's
    /// `RunFilterPluginsWithNominatedPods` in `SelectVictimsOnNode`).
    pub evals: Evals,
}

impl Snapshot {
    /// The dry run over `potential` (slots), starting at `offset`, stopping once
    /// `num_candidates` candidates are found with at least one of them violating no PDB.
    #[allow(clippy::too_many_arguments)]
    pub fn dry_run_preemption(
        &mut self,
        pod: &CompiledPod,
        profile: &Profile,
        potential: &[u32],
        offset: usize,
        num_candidates: usize,
        pdbs: &[Pdb],
        now: f64,
    ) -> (DryRun, PodState) {
        let st = self.prefilter(pod, profile);
        let arithmetic = st.only_fit_sees_pods;
        let mut out = DryRun::default();
        let mut non_violating: Vec<Candidate> = Vec::new();
        let mut violating: Vec<Candidate> = Vec::new();
        let n = potential.len();
        let mut pos = 0;
        'waves: while pos < n {
            // Arithmetic leaves the snapshot alone, so a wave of nodes is evaluated in
            // parallel; its results are then taken in order, as if nodes were examined
            // one by one (the nodes after the stopping point are simply discarded).
            let wave = if arithmetic { WAVE.min(n - pos) } else { 1 };
            let slots = (pos..pos + wave).map(|i| potential[(offset + i) % n]);
            let mut results: Vec<Evaluated> = if arithmetic {
                let slots: Vec<u32> = slots.collect();
                let eval = |scratch: &mut Scratch, slot: u32| {
                    let mut tally = FilterTally::default();
                    let found =
                        self.node_by_arithmetic(profile, &st, slot, pdbs, now, scratch, &mut tally);
                    (slot, found, scratch.memo.take(), tally)
                };
                if wave >= PARALLEL_MIN_WAVE {
                    slots
                        .par_iter()
                        .with_min_len(PARALLEL_CHUNK)
                        .map_init(Scratch::default, |sc, &slot| eval(sc, slot))
                        .collect()
                } else {
                    let mut sc = Scratch::default();
                    slots.iter().map(|&slot| eval(&mut sc, slot)).collect()
                }
            } else {
                slots
                    .map(|slot| {
                        let mut tally = FilterTally::default();
                        let found =
                            self.node_by_detaching(pod, profile, &st, slot, pdbs, now, &mut tally);
                        (slot, found, None, tally)
                    })
                    .collect()
            };
            for (slot, _, memo, _) in results.iter_mut() {
                if let Some(m) = memo.take() {
                    self.lower_pods[*slot as usize] = *m;
                }
            }
            for (slot, found, _, tally) in results {
                out.examined += 1;
                Self::filter_evals(&st, &tally, &mut out.evals);
                match found {
                    Ok(c) => {
                        let target = if c.num_pdb_violations == 0 {
                            &mut non_violating
                        } else {
                            &mut violating
                        };
                        if target.len() < num_candidates {
                            target.push(c);
                        }
                        if !non_violating.is_empty()
                            && non_violating.len() + violating.len() >= num_candidates
                        {
                            break 'waves;
                        }
                    }
                    Err(why) => out.rejected.push((slot, why)),
                }
            }
            pos += wave;
        }
        non_violating.append(&mut violating);
        out.candidates = non_violating;
        (out, st)
    }

    /// What every node's evaluation starts with: PreFilter rejections and PreFilter
    /// results apply to the node whatever its pods.
    fn prefilter_verdict(st: &PodState, slot: u32) -> Option<NotCandidate> {
        if let Some((plugin, _)) = &st.prefilter_reject {
            return Some(NotCandidate::Rejected(Reject {
                plugin: *plugin,
                unresolvable: true,
                detail: 0,
            }));
        }
        if st.allowed.as_ref().is_some_and(|a| !a.contains(&slot)) {
            return Some(NotCandidate::Rejected(Reject {
                plugin: Plugin::NodeAffinity,
                unresolvable: true,
                detail: DETAIL_NOT_IN_PREFILTER_RESULT,
            }));
        }
        None
    }

    /// The lower-priority pods on `slot`, in the node's order, into `out`.
    fn lower_priority_pods(&self, slot: u32, priority: i32, out: &mut Vec<u32>) {
        out.clear();
        out.extend(
            self.node_pods[slot as usize]
                .iter()
                .copied()
                .filter(|&idx| self.record(idx).priority < priority),
        );
    }

    /// Most important first: higher priority, then earlier start (`now` for pods that
    /// have not started), then uid.
    fn sort_by_importance(&self, pods: &mut [u32], now: f64) {
        pods.sort_by(|&a, &b| {
            let (a, b) = (self.record(a), self.record(b));
            b.priority
                .cmp(&a.priority)
                .then(
                    a.start_time
                        .unwrap_or(now)
                        .total_cmp(&b.start_time.unwrap_or(now)),
                )
                .then_with(|| a.uid.cmp(&b.uid))
        });
    }

    #[inline]
    fn record(&self, idx: u32) -> &PodRecord {
        self.pods[idx as usize]
            .as_ref()
            .expect("node_pods lists live pods only")
    }

    /// `ordered` split into PDB-violating pods and the others, each in order
    /// (upstream `filterPodsWithPDBViolation`: each matching PDB's budget is charged,
    /// except for pods already in its `disruptedPods`; a pod without labels matches none).
    fn split_by_pdb(&self, ordered: Vec<u32>, pdbs: &[Pdb]) -> (Vec<u32>, usize) {
        if pdbs.is_empty() {
            return (ordered, 0);
        }
        let mut allowed: Vec<i64> = pdbs.iter().map(|p| p.disruptions_allowed).collect();
        let mut violating = Vec::new();
        let mut others = Vec::new();
        for idx in ordered {
            let rec = self.record(idx);
            let mut violated = false;
            if !rec.labels.is_empty() {
                for (i, pdb) in pdbs.iter().enumerate() {
                    let Some(sel) = &pdb.selector else { continue };
                    if pdb.namespace != rec.namespace
                        || !sel.matches(&rec.labels)
                        || pdb.disrupted.contains(&rec.name)
                    {
                        continue;
                    }
                    allowed[i] -= 1;
                    if allowed[i] < 0 {
                        violated = true;
                    }
                }
            }
            if violated {
                violating.push(idx);
            } else {
                others.push(idx);
            }
        }
        let num_violating = violating.len();
        violating.append(&mut others);
        (violating, num_violating)
    }

    fn victim(&self, rec: &PodRecord, now: f64) -> Victim {
        Victim {
            uid: rec.uid.clone(),
            priority: rec.priority,
            start: rec.start_time.unwrap_or(now),
        }
    }

    /// The candidate on `slot` with the node's pods freed arithmetically; each Filter
    /// run is counted in `tally`.
    #[allow(clippy::too_many_arguments)]
    fn node_by_arithmetic(
        &self,
        profile: &Profile,
        st: &PodState,
        slot: u32,
        pdbs: &[Pdb],
        now: f64,
        scratch: &mut Scratch,
        tally: &mut FilterTally,
    ) -> Result<Candidate, NotCandidate> {
        if let Some(why) = Self::prefilter_verdict(st, slot) {
            return Err(why);
        }
        let Scratch { pods, freed, memo } = scratch;
        let i = slot as usize;
        let stamp = u64::from(self.slot_gen[i]) + 1;
        let cached = &self.lower_pods[i];
        let (count, all_freed) = if cached.stamp == stamp && cached.priority == st.priority {
            (cached.count, &cached.freed)
        } else {
            freed.clear();
            let mut count = 0;
            for &idx in &self.node_pods[i] {
                let rec = self.record(idx);
                if rec.priority < st.priority {
                    freed.add(&rec.requests, 1);
                    count += 1;
                }
            }
            *memo = Some(Box::new(LowerPods {
                stamp,
                priority: st.priority,
                count,
                freed: freed.clone(),
            }));
            (count, &*freed)
        };
        if count == 0 {
            return Err(NotCandidate::NoVictims);
        }
        let verdict = self.filter_node_freed(profile, st, slot, all_freed);
        self.tally(st, slot, verdict.as_ref(), tally);
        if let Some(r) = verdict {
            return Err(self.not_candidate(st, slot, r));
        }
        let mut freed = all_freed.clone();
        self.lower_priority_pods(slot, st.priority, pods);
        self.sort_by_importance(pods, now);
        let (ordered, num_violating) = self.split_by_pdb(std::mem::take(pods), pdbs);
        let mut victims = Vec::new();
        let mut violations = 0;
        for (k, &idx) in ordered.iter().enumerate() {
            let rec = self.record(idx);
            freed.add(&rec.requests, -1);
            let verdict = self.filter_node_freed(profile, st, slot, &freed);
            self.tally(st, slot, verdict.as_ref(), tally);
            if verdict.is_some() {
                freed.add(&rec.requests, 1);
                victims.push(self.victim(rec, now));
                violations += usize::from(k < num_violating);
            }
        }
        let num_potential = ordered.len();
        *pods = ordered;
        self.candidate(slot, victims, violations, num_violating, num_potential)
    }

    /// The candidate on `slot` with the node's pods really taken off the snapshot (and
    /// the PreFilter state recomputed at every step); every record is put back.
    #[allow(clippy::too_many_arguments)]
    fn node_by_detaching(
        &mut self,
        pod: &CompiledPod,
        profile: &Profile,
        st: &PodState,
        slot: u32,
        pdbs: &[Pdb],
        now: f64,
        tally: &mut FilterTally,
    ) -> Result<Candidate, NotCandidate> {
        if let Some(why) = Self::prefilter_verdict(st, slot) {
            return Err(why);
        }
        let mut potential = Vec::new();
        self.lower_priority_pods(slot, pod.priority, &mut potential);
        if potential.is_empty() {
            return Err(NotCandidate::NoVictims);
        }
        self.sort_by_importance(&mut potential, now);
        let (ordered, num_violating) = self.split_by_pdb(potential, pdbs);
        let mut detached: Vec<Option<PodRecord>> =
            ordered.iter().map(|&idx| self.detach(idx)).collect();
        // VolumeRestrictions keeps its PreFilter count and moves it by the victims'
        // references (RemovePod/AddPod), as upstream, rather than counting afresh.
        let base: Option<RestrictionsState> = st.restrictions.clone();
        let refs = |rec: &PodRecord| {
            base.as_ref()
                .map_or(0, |b| volume_restrictions::refs(b, rec))
        };
        let mut removed: i64 = detached.iter().flatten().map(refs).sum();
        let fits = |snap: &mut Snapshot,
                    removed: i64,
                    gone: &[Option<PodRecord>],
                    tally: &mut FilterTally|
         -> Option<NotCandidate> {
            let mut again = snap.prefilter(pod, profile);
            // DynamicResources' Filter does not look at pods: the attempt's one holds.
            again.dra = st.dra.clone();
            // PodTopologySpread's RemovePod also takes away pods it never counted.
            let ns = snap.interner.intern(&pod.namespace);
            let mut spread = std::mem::take(&mut again.spread);
            pts::remove_uncounted(
                snap,
                &mut spread,
                slot,
                ns,
                gone.iter().flatten(),
                &again.node_affinity.required,
                &again.taints,
            );
            again.spread = spread;
            // InterPodAffinity keeps its PreFilter state and moves it by the victims'
            // terms and labels (RemovePod/AddPod, upstream `updateWithPod`), which the
            // counts afresh equal; but whether its PreFilter skipped the pod, so whether
            // the nominated pods' AddPod counts in the dry run's Filter, stays the
            // cycle's: a pod whose only matching anti-affinity was a victim's is still
            // filtered against the nominated pods' anti-affinity terms.
            let ipa_changed =
                again.ipa.active != st.ipa.active || again.ipa.skipped != st.ipa.skipped;
            again.ipa.active = st.ipa.active;
            again.ipa.skipped = st.ipa.skipped;
            if ipa_changed {
                snap.refresh_active_filters(profile, &mut again);
                again.only_fit_sees_pods = false;
            }
            if again.restrictions.is_some() || base.is_some() {
                again.restrictions = base.as_ref().map(|b| RestrictionsState {
                    conflicts: b.conflicts - removed,
                    ..b.clone()
                });
                snap.refresh_active_filters(profile, &mut again);
                again.only_fit_sees_pods = false;
            }
            let verdict = snap.filter_node(profile, &again, slot);
            snap.tally(&again, slot, verdict.as_ref(), tally);
            verdict.map(|r| snap.not_candidate(&again, slot, r))
        };
        let result = if let Some(why) = fits(self, removed, &detached, tally) {
            Err(why)
        } else {
            let mut victims = Vec::new();
            let mut violations = 0;
            for k in 0..detached.len() {
                let Some(rec) = detached[k].take() else {
                    continue;
                };
                let r = refs(&rec);
                let idx = self.attach(rec);
                removed -= r;
                if fits(self, removed, &detached, tally).is_some() {
                    let rec = self.detach(idx).expect("attached just now");
                    removed += r;
                    victims.push(self.victim(&rec, now));
                    violations += usize::from(k < num_violating);
                    detached[k] = Some(rec);
                }
            }
            Ok((victims, violations))
        };
        for rec in detached.into_iter().flatten() {
            self.attach(rec);
        }
        let (victims, violations) = result?;
        self.candidate(slot, victims, violations, num_violating, ordered.len())
    }

    /// A Filter's rejection of the node as a dry-run outcome (a Filter error ends the
    /// node's evaluation with that error).
    fn not_candidate(&self, st: &PodState, slot: u32, r: Reject) -> NotCandidate {
        if r.detail == DETAIL_ERROR {
            NotCandidate::Error(format!(
                "running {:?} filter plugin: {}",
                r.plugin.name(),
                self.error_message(st, slot, &r)
            ))
        } else if r.plugin == Plugin::DynamicResources && DraFilter::is_error(r.detail) {
            // DynamicResources keeps its own details: its Filter error (a CEL runtime
            // error, the timeout) fails the dry run as upstream's Error status does.
            let msg = st
                .dra
                .as_ref()
                .map(|d| d.reason(r.detail))
                .unwrap_or_default();
            NotCandidate::Error(format!(
                "running {:?} filter plugin: {msg}",
                r.plugin.name()
            ))
        } else {
            NotCandidate::Rejected(r)
        }
    }

    fn candidate(
        &self,
        slot: u32,
        mut victims: Vec<Victim>,
        num_pdb_violations: usize,
        num_violating: usize,
        num_potential: usize,
    ) -> Result<Candidate, NotCandidate> {
        let node = &self.names[slot as usize];
        if victims.is_empty() {
            return Err(NotCandidate::Error(format!(
                "expected at least one victim pod on node {node:?}"
            )));
        }
        if num_violating != 0 && num_violating != num_potential {
            victims.sort_by(|a, b| {
                b.priority
                    .cmp(&a.priority)
                    .then(a.start.total_cmp(&b.start))
                    .then_with(|| a.uid.cmp(&b.uid))
            });
        }
        Ok(Candidate {
            node: node.clone(),
            victims,
            num_pdb_violations,
        })
    }
}

/// Upstream `pickOneNodeForPreemption`: fewest PDB violations, then the lowest priority
/// of the most important victim, the smallest sum of victim priorities (each offset by
/// `MaxInt32 + 1`), the fewest victims, the latest start time among the victims of the
/// highest priority; the first of equals. `None` when there is no candidate.
pub fn pick_one(candidates: &[Candidate]) -> Option<usize> {
    // Smaller is better on every criterion but the start time, where later is better.
    let key = |c: &Candidate| {
        // The first victim's priority (victims are most important first), as upstream;
        // the start-time criterion finds the highest priority itself.
        let first = c.victims.first().map_or(i32::MIN, |v| v.priority);
        let highest = c
            .victims
            .iter()
            .map(|v| v.priority)
            .max()
            .unwrap_or(i32::MIN);
        let mut sum = 0i64;
        let mut earliest = f64::INFINITY;
        for v in &c.victims {
            sum += i64::from(v.priority) + PRIORITY_OFFSET;
            if v.priority == highest && v.start < earliest {
                earliest = v.start;
            }
        }
        (
            (c.num_pdb_violations, first, sum, c.victims.len()),
            earliest,
        )
    };
    let mut best: Option<usize> = None;
    let mut best_key = ((0, 0, 0, 0), 0.0f64);
    for (i, c) in candidates.iter().enumerate() {
        let k = key(c);
        if best.is_none()
            || k.0
                .cmp(&best_key.0)
                .then(best_key.1.total_cmp(&k.1))
                .is_lt()
        {
            best = Some(i);
            best_key = k;
        }
    }
    best
}

/// The dry run's result as Python sees it.
#[pyclass(frozen, module = "ksched._core")]
pub struct PreemptionDryRun {
    pub candidates: Vec<Candidate>,
    /// `(node, unresolvable, plugin, reasons)` of the nodes examined that are no
    /// candidate (an empty plugin for "no victims" and errors).
    pub statuses: Vec<(String, bool, &'static str, Vec<String>)>,
    pub errors: Vec<String>,
    #[pyo3(get)]
    pub examined: usize,
    pub evals: Evals,
}

type PyCandidate = (String, Vec<String>, usize);

fn to_py(c: &Candidate) -> PyCandidate {
    (
        c.node.to_string(),
        c.victims.iter().map(|v| v.uid.to_string()).collect(),
        c.num_pdb_violations,
    )
}

#[pymethods]
impl PreemptionDryRun {
    fn __len__(&self) -> usize {
        self.candidates.len()
    }

    /// `(plugin, "Filter", count)` of the dry run's Filter evaluations (upstream's
    /// `scheduler_plugin_evaluation_total`).
    #[getter]
    fn plugin_evaluations(&self) -> Vec<(&'static str, &'static str, u32)> {
        self.evals.nonzero()
    }

    /// Every candidate, non-violating ones first: `[(node, [victim uid, ...],
    /// num_pdb_violations), ...]`, victims most important first.
    fn candidates(&self) -> Vec<PyCandidate> {
        self.candidates.iter().map(to_py).collect()
    }

    /// The best candidate by upstream's ranking, or None.
    fn best(&self) -> Option<PyCandidate> {
        pick_one(&self.candidates).map(|i| to_py(&self.candidates[i]))
    }

    /// The statuses of the nodes examined that are no candidate, formatted only when
    /// there is no candidate at all: `[(node, unresolvable, plugin, [reason, ...])]`.
    #[getter]
    fn statuses(&self) -> Vec<(String, bool, &'static str, Vec<String>)> {
        self.statuses.clone()
    }

    #[getter]
    fn errors(&self) -> Vec<String> {
        self.errors.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "PreemptionDryRun({} candidates, {} nodes examined)",
            self.candidates.len(),
            self.examined
        )
    }
}

impl Snapshot {
    /// Package a dry run for Python, formatting the non-candidates' reasons only when
    /// no candidate was found (the only time they are read).
    pub fn dry_run_result(&self, run: DryRun, st: &PodState) -> PreemptionDryRun {
        let mut errors = Vec::new();
        let mut statuses = Vec::new();
        for (slot, why) in &run.rejected {
            let name = self.names[*slot as usize].to_string();
            match why {
                NotCandidate::Error(msg) => {
                    errors.push(msg.clone());
                    if run.candidates.is_empty() {
                        statuses.push((name, false, "", vec![msg.clone()]));
                    }
                }
                _ if !run.candidates.is_empty() => {}
                NotCandidate::NoVictims => {
                    statuses.push((name, true, "", vec![ERR_NO_VICTIMS.to_string()]))
                }
                NotCandidate::Rejected(r) => statuses.push((
                    name,
                    r.unresolvable,
                    r.status_plugin(),
                    self.reasons(st, *slot, r),
                )),
            }
        }
        PreemptionDryRun {
            candidates: run.candidates,
            statuses,
            errors,
            examined: run.examined,
            evals: run.evals,
        }
    }
}
