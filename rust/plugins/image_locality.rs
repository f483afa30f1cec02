//! ImageLocality: prefer nodes that already hold the pod's images.
//!
//! For every container image (names normalized with `:latest` when untagged) present on
//! the node, the image size scaled by the share of nodes holding it is summed; the sum is
//! clamped to `[23MB, 1000MB × containers]` and mapped linearly to 0..100.

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
    pub images: Vec<u32>,
    pub num_containers: i64,
}

pub fn prefilter(images: &[String], interner: &mut Interner) -> ImageState {
    ImageState {
        images: images
            .iter()
            .map(|i| interner.intern(&normalized_image_name(i)))
            .collect(),
        num_containers: images.len() as i64,
    }
}

pub fn score(snap: &Snapshot, st: &ImageState, slot: u32, total_nodes: usize) -> i64 {
    if st.num_containers == 0 {
        return 0;
    }
    let node_images = &snap.node_images[slot as usize];
    let mut sum = 0i64;
    for img in &st.images {
        if let Some(&(_, size)) = node_images.iter().find(|(id, _)| id == img) {
            let holders = snap.image_nodes.get(img).copied().unwrap_or(0);
            let spread = holders as f64 / total_nodes.max(1) as f64;
            sum += (size as f64 * spread) as i64;
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
