//! ImageLocality: prefer nodes that already hold the pod's images.
//!
//! For every image of the pod's containers, init containers and image volumes (names
//! normalized with `:latest` when untagged) present on the node, the image's size scaled
//! by the share of nodes holding it is summed; the sum is clamped to
//! `[23MB, 1000MB × containers]` (image volumes do not count as containers) and mapped
//! linearly to 0..100.
//!
//! The size is the snapshot's one size per image name (`Snapshot::image_states`), not
//! the node's own `sizeBytes`: upstream scores with the cache's image-state summary,
//! whose size is the one reported by the first node that listed the name
//! (`cacheImpl.addNodeImageStates`), kept while any node still lists it. Where nodes
//! report different sizes for one name, every node scores with that first size. This
//! looks like an upstream quirk (a node's own size is never used once another node
//! listed the name first); ksched mirrors it.

use crate::snapshot::intern::Interner;
use crate::snapshot::Snapshot;

pub const NAME: &str = "ImageLocality";
const MB: i64 = 1024 * 1024;
const MIN_THRESHOLD: i64 = 23 * MB;
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// `name` with `:latest` appended when it has no tag.
pub fn normalized_image_name(name: &str) -> String {
    let colon = name.rfind(':');
    let slash = name.rfind('/');
    let untagged = match (colon, slash) {
        (None, _) => true,
        (Some(c), Some(s)) => c <= s,
        (Some(_), None) => false,
    };
    if untagged {
        format!("{name}:latest")
    } else {
        name.to_string()
    }
}

#[derive(Clone, Debug, Default)]
pub struct ImageState {
    /// Normalized image ids: containers (init first), then image volumes.
    pub images: Vec<u32>,
    /// Init and app containers (the threshold's multiplier).
    pub num_containers: i64,
}

pub fn prefilter(
    images: &[String],
    image_volumes: &[String],
    interner: &mut Interner,
) -> ImageState {
    ImageState {
        images: images
            .iter()
            .chain(image_volumes)
            .map(|i| interner.intern(&normalized_image_name(i)))
            .collect(),
        num_containers: images.len() as i64,
    }
}

/// Upstream `sumImageScores` then `calculatePriority`.
pub fn score(snap: &Snapshot, st: &ImageState, slot: u32, total_nodes: usize) -> i64 {
    if st.num_containers == 0 {
        return 0;
    }
    let node_images = &snap.node_images[slot as usize];
    let mut sum = 0i64;
    for img in &st.images {
        if !node_images.contains(img) {
            continue;
        }
        if let Some(state) = snap.image_states.get(img) {
            let spread = state.num_nodes as f64 / total_nodes.max(1) as f64;
            sum += (state.size as f64 * spread) as i64;
        }
    }
    let max_threshold = MAX_CONTAINER_THRESHOLD * st.num_containers;
    let clamped = sum.clamp(MIN_THRESHOLD, max_threshold.max(MIN_THRESHOLD));
    if max_threshold <= MIN_THRESHOLD {
        return 0;
    }
    100 * (clamped - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_untagged_names() {
        assert_eq!(normalized_image_name("nginx"), "nginx:latest");
        assert_eq!(normalized_image_name("nginx:1.25"), "nginx:1.25");
        assert_eq!(
            normalized_image_name("localhost:5000/app"),
            "localhost:5000/app:latest"
        );
        assert_eq!(
            normalized_image_name("localhost:5000/app:v1"),
            "localhost:5000/app:v1"
        );
    }
}
