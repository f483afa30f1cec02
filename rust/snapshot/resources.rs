//! The resource table: one `i64` column per resource name, per node slot.
//!
//! Units follow kube-scheduler's `framework.Resource`: CPU in millicores, memory,
//! ephemeral storage and hugepages in bytes, pods and extended resources as counts. The
//! four well-known resources have fixed columns; any other name (an extended resource
//! such as `nvidia.com/gpu`, hugepages, ...) gets a column the first time a node or a pod
//! mentions it, so a pod asking for a resource no node has sees allocatable 0 everywhere.

use ahash::AHashMap;

pub const CPU: usize = 0;
pub const MEMORY: usize = 1;
pub const EPHEMERAL_STORAGE: usize = 2;
pub const PODS: usize = 3;

const WELL_KNOWN: [&str; 4] = ["cpu", "memory", "ephemeral-storage", "pods"];

#[derive(Debug, Clone)]
pub struct ResourceTable {
    names: Vec<String>,
    index: AHashMap<String, usize>,
}

impl Default for ResourceTable {
    fn default() -> Self {
        Self::new()
    }
}

impl ResourceTable {
    pub fn new() -> Self {
        let mut table = ResourceTable {
            names: Vec::new(),
            index: AHashMap::new(),
        };
        for name in WELL_KNOWN {
            table.column_for(name);
        }
        table
    }

    /// The column of `name`, creating it when new. Returns `(column, created)`.
    pub fn column_for(&mut self, name: &str) -> (usize, bool) {
        if let Some(&c) = self.index.get(name) {
            return (c, false);
        }
        let c = self.names.len();
        self.names.push(name.to_owned());
        self.index.insert(name.to_owned(), c);
        (c, true)
    }

    pub fn get(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    pub fn name(&self, column: usize) -> &str {
        &self.names[column]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Extended resources are the names that are not in the default `kubernetes.io/`
/// namespace and are not native (`requests.` prefixed quota names are not resources a
/// pod can request). Mirrors `v1helper.IsExtendedResourceName`.
pub fn is_extended_resource_name(name: &str) -> bool {
    if is_native_resource(name) || name.starts_with("requests.") {
        return false;
    }
    // Must be a qualified name with a domain prefix.
    name.contains('/')
}

fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}
