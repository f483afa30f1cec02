//! The `resource.k8s.io/v1` objects the allocator reads, decoded from the API's JSON
//! with serde: ResourceSlices, DeviceClasses and the spec of ResourceClaims, and the
//! `core/v1` NodeSelector they use. Only the fields allocation looks at are kept;
//! unknown fields are ignored, as a client of a newer apiserver must.
//!
//! Field names are the API's (`camelCase`), so a decoding error names the field the way
//! a user wrote it.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

use super::quantity::Quantity;

fn quantity<'de, D: Deserializer<'de>>(d: D) -> Result<Quantity, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        S(String),
        I(i64),
        F(f64),
    }
    let text = match Raw::deserialize(d)? {
        Raw::S(s) => s,
        Raw::I(i) => i.to_string(),
        Raw::F(f) => f.to_string(),
    };
    Quantity::parse(&text).map_err(serde::de::Error::custom)
}

fn opt_quantity<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Quantity>, D::Error> {
    #[derive(Deserialize)]
    struct W(#[serde(deserialize_with = "quantity")] Quantity);
    Option::<W>::deserialize(d).map(|o| o.map(|w| w.0))
}

fn quantities<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Quantity>, D::Error> {
    #[derive(Deserialize)]
    struct W(#[serde(deserialize_with = "quantity")] Quantity);
    Option::<Vec<W>>::deserialize(d)
        .map(|o| o.unwrap_or_default().into_iter().map(|w| w.0).collect())
}

fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

#[derive(Deserialize, Debug, Clone, Default)]
pub struct ObjectMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub uid: String,
}

// ---- core/v1 NodeSelector -------------------------------------------------------------

#[derive(Deserialize, Debug, Clone, Default, PartialEq)]
pub struct NodeSelector {
    #[serde(
        rename = "nodeSelectorTerms",
        default,
        deserialize_with = "null_default"
    )]
    pub terms: Vec<NodeSelectorTerm>,
}

#[derive(Deserialize, Debug, Clone, Default, PartialEq)]
pub struct NodeSelectorTerm {
    #[serde(
        rename = "matchExpressions",
        default,
        deserialize_with = "null_default"
    )]
    pub match_expressions: Vec<NodeSelectorRequirement>,
    #[serde(rename = "matchFields", default, deserialize_with = "null_default")]
    pub match_fields: Vec<NodeSelectorRequirement>,
}

#[derive(Deserialize, Debug, Clone, Default, PartialEq)]
pub struct NodeSelectorRequirement {
    pub key: String,
    pub operator: String,
    #[serde(default, deserialize_with = "null_default")]
    pub values: Vec<String>,
}

// ---- ResourceSlice ---------------------------------------------------------------------

#[derive(Deserialize, Debug, Clone)]
pub struct ResourceSlice {
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: ResourceSliceSpec,
    /// Unique per decoded object (set by the store): keys the CEL results cache.
    #[serde(skip)]
    pub serial: u64,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSliceSpec {
    pub driver: String,
    pub pool: ResourcePool,
    #[serde(default)]
    pub node_name: Option<String>,
    #[serde(default)]
    pub node_selector: Option<NodeSelector>,
    #[serde(default)]
    pub all_nodes: Option<bool>,
    #[serde(default, deserialize_with = "null_default")]
    pub devices: Vec<Device>,
    #[serde(default)]
    pub per_device_node_selection: Option<bool>,
    #[serde(default, deserialize_with = "null_default")]
    pub shared_counters: Vec<CounterSet>,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ResourcePool {
    pub name: String,
    #[serde(default)]
    pub generation: i64,
    #[serde(default)]
    pub resource_slice_count: i64,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    pub name: String,
    #[serde(default, deserialize_with = "null_default")]
    pub attributes: BTreeMap<String, DeviceAttribute>,
    #[serde(default, deserialize_with = "null_default")]
    pub capacity: BTreeMap<String, DeviceCapacity>,
    #[serde(default, deserialize_with = "null_default")]
    pub consumes_counters: Vec<DeviceCounterConsumption>,
    #[serde(default)]
    pub node_name: Option<String>,
    #[serde(default)]
    pub node_selector: Option<NodeSelector>,
    #[serde(default)]
    pub all_nodes: Option<bool>,
    #[serde(default, deserialize_with = "null_default")]
    pub taints: Vec<DeviceTaint>,
    #[serde(default)]
    pub binds_to_node: Option<bool>,
    #[serde(default)]
    pub binding_conditions: Option<Vec<String>>,
    #[serde(default)]
    pub binding_failure_conditions: Option<Vec<String>>,
    #[serde(default)]
    pub allow_multiple_allocations: Option<bool>,
}

#[derive(Deserialize, Debug, Clone, Default, PartialEq)]
pub struct DeviceAttribute {
    #[serde(default)]
    pub int: Option<i64>,
    #[serde(default)]
    pub bool: Option<bool>,
    #[serde(default)]
    pub string: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCapacity {
    #[serde(deserialize_with = "quantity")]
    pub value: Quantity,
    #[serde(default)]
    pub request_policy: Option<CapacityRequestPolicy>,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct CapacityRequestPolicy {
    #[serde(default, deserialize_with = "opt_quantity")]
    pub default: Option<Quantity>,
    #[serde(default, deserialize_with = "quantities")]
    pub valid_values: Vec<Quantity>,
    #[serde(default)]
    pub valid_range: Option<CapacityRequestPolicyRange>,
}

#[derive(Deserialize, Debug, Clone)]
pub struct CapacityRequestPolicyRange {
    #[serde(default, deserialize_with = "opt_quantity")]
    pub min: Option<Quantity>,
    #[serde(default, deserialize_with = "opt_quantity")]
    pub max: Option<Quantity>,
    #[serde(default, deserialize_with = "opt_quantity")]
    pub step: Option<Quantity>,
}

#[derive(Deserialize, Debug, Clone)]
pub struct Counter {
    #[serde(deserialize_with = "quantity")]
    pub value: Quantity,
}

#[derive(Deserialize, Debug, Clone)]
pub struct CounterSet {
    pub name: String,
    #[serde(default, deserialize_with = "null_default")]
    pub counters: BTreeMap<String, Counter>,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCounterConsumption {
    pub counter_set: String,
    #[serde(default, deserialize_with = "null_default")]
    pub counters: BTreeMap<String, Counter>,
}

#[derive(Deserialize, Debug, Clone, Default)]
pub struct DeviceTaint {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub value: String,
    #[serde(default)]
    pub effect: String,
}

// ---- DeviceClass -------------------------------------------------------------------------

#[derive(Deserialize, Debug, Clone)]
pub struct DeviceClass {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: DeviceClassSpec,
}

#[derive(Deserialize, Debug, Clone, Default)]
pub struct DeviceClassSpec {
    #[serde(default, deserialize_with = "null_default")]
    pub selectors: Vec<DeviceSelector>,
    /// Kept as raw JSON: copied into allocation results unchanged.
    #[serde(default, deserialize_with = "null_default")]
    pub config: Vec<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Deserialize, Debug, Clone, Default)]
pub struct DeviceSelector {
    #[serde(default)]
    pub cel: Option<CelDeviceSelector>,
}

#[derive(Deserialize, Debug, Clone)]
pub struct CelDeviceSelector {
    pub expression: String,
}

// ---- ResourceClaim -----------------------------------------------------------------------

#[derive(Deserialize, Debug, Clone)]
pub struct ResourceClaim {
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: ResourceClaimSpec,
}

#[derive(Deserialize, Debug, Clone, Default)]
pub struct ResourceClaimSpec {
    #[serde(default)]
    pub devices: DeviceClaim,
}

#[derive(Deserialize, Debug, Clone, Default)]
pub struct DeviceClaim {
    #[serde(default, deserialize_with = "null_default")]
    pub requests: Vec<DeviceRequest>,
    #[serde(default, deserialize_with = "null_default")]
    pub constraints: Vec<DeviceConstraint>,
    #[serde(default, deserialize_with = "null_default")]
    pub config: Vec<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRequest {
    pub name: String,
    #[serde(default)]
    pub exactly: Option<ExactDeviceRequest>,
    #[serde(default, deserialize_with = "null_default")]
    pub first_available: Vec<DeviceSubRequest>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct ExactDeviceRequest {
    #[serde(default)]
    pub device_class_name: String,
    #[serde(default, deserialize_with = "null_default")]
    pub selectors: Vec<DeviceSelector>,
    #[serde(default)]
    pub allocation_mode: Option<String>,
    #[serde(default)]
    pub count: Option<i64>,
    #[serde(default)]
    pub admin_access: Option<bool>,
    /// Raw, copied into the allocation result.
    #[serde(default)]
    pub tolerations: Option<Vec<serde_json::Value>>,
    #[serde(default)]
    pub capacity: Option<CapacityRequirements>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct DeviceSubRequest {
    pub name: String,
    #[serde(default)]
    pub device_class_name: String,
    #[serde(default, deserialize_with = "null_default")]
    pub selectors: Vec<DeviceSelector>,
    #[serde(default)]
    pub allocation_mode: Option<String>,
    #[serde(default)]
    pub count: Option<i64>,
    #[serde(default)]
    pub tolerations: Option<Vec<serde_json::Value>>,
    #[serde(default)]
    pub capacity: Option<CapacityRequirements>,
}

#[derive(Deserialize, Debug, Clone, Default)]
pub struct CapacityRequirements {
    #[serde(default)]
    pub requests: Option<BTreeMap<String, QuantityValue>>,
}

#[derive(Debug, Clone)]
pub struct QuantityValue(pub Quantity);

impl<'de> Deserialize<'de> for QuantityValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        quantity(d).map(QuantityValue)
    }
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct DeviceConstraint {
    #[serde(default, deserialize_with = "null_default")]
    pub requests: Vec<String>,
    #[serde(default)]
    pub match_attribute: Option<String>,
    #[serde(default)]
    pub distinct_attribute: Option<String>,
}

/// A toleration of a device taint, as `resourceclaim.ToleratesTaint` reads it.
#[derive(Deserialize, Debug, Clone, Default)]
pub struct DeviceToleration {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub operator: String,
    #[serde(default)]
    pub value: String,
    #[serde(default)]
    pub effect: String,
}
