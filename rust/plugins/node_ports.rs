//! NodePorts: a pod's host ports must be free on the node.
//!
//! A wanted `(protocol, hostIP, port)` conflicts with a used one of the same protocol and
//! port when the IPs are equal or either is `0.0.0.0` (bind-all). Failure reason:
//! "node(s) didn't have free ports for the requested pod ports" (Unschedulable).

use crate::snapshot::intern::Interner;
use crate::snapshot::Snapshot;

pub const NAME: &str = "NodePorts";
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";
pub const BIND_ALL: &str = "0.0.0.0";

/// `(protocol id, host IP id, port)`.
pub type HostPort = (u32, u32, i32);

/// Intern a pod's host ports, defaulting protocol to TCP and the IP to 0.0.0.0.
pub fn compile(ports: &[(String, String, i32)], interner: &mut Interner) -> Vec<HostPort> {
    ports
        .iter()
        .filter(|(_, _, port)| *port > 0)
        .map(|(proto, ip, port)| {
            let proto = if proto.is_empty() { "TCP" } else { proto };
            let ip = if ip.is_empty() { BIND_ALL } else { ip };
            (interner.intern(proto), interner.intern(ip), *port)
        })
        .collect()
}

#[inline]
pub fn filter(snap: &Snapshot, wanted: &[HostPort], bind_all: u32, slot: u32) -> bool {
    let used = &snap.node_ports[slot as usize];
    if used.is_empty() {
        return true;
    }
    !wanted.iter().any(|&(proto, ip, port)| {
        used.iter().any(|&(uproto, uip, uport)| {
            uproto == proto && uport == port && (ip == bind_all || uip == bind_all || uip == ip)
        })
    })
}
