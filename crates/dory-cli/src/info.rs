//! `dory info`: what a model is and what it costs.

use anyhow::Result;
use dory::{Backend, LayerKind};

use crate::common::{mib, ModelArgs};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Show cache bytes at this context length.
    #[arg(long, default_value_t = 4096)]
    pub context: usize,
}

pub fn run(a: &Args) -> Result<()> {
    let model = a.model.load()?;
    let c = &model.config;
    let session = a.model.session(&model)?;
    let layers: Vec<&str> =
        c.layers.iter().map(|k| if *k == LayerKind::Sliding { "sliding" } else { "full" }).collect();
    println!("model        {}", model.dir.display());
    println!("backend      {}", session.forward().backend.name());
    println!(
        "shape        hidden {} · heads {} (kv {}) × {} · ffn {} · vocab {}",
        c.hidden, c.heads, c.kv_heads, c.head_dim, c.ffn, c.vocab_size
    );
    println!("block        [{}] × {} passes, window {}", layers.join(", "), c.passes, c.window);
    println!("rope         θ {} (full layers: {})", c.rope_theta, if c.rope_full { "rotated" } else { "not rotated" });
    println!("exit         {:?}", c.exit);
    if let Some(o) = &c.o1 {
        println!(
            "o1           sinks {} · window {} · landmarks {} · stride {} · rect {} · seal at {}",
            o.sinks, o.window, o.landmarks, o.stride, o.rect, o.seal_at
        );
    }
    println!("parameters   {} ({:.2} M)", c.parameters(), c.parameters() as f64 / 1e6);
    println!(
        "weights      {} stored ({:?}), {} as the CPU holds them (f32)",
        mib(model.weights.stored_bytes as u64),
        model.weights.dtype(),
        mib(session.forward().backend.weight_bytes() as u64)
    );
    let cache = cache_bytes(c, a.context);
    println!("caches       {} at context {} (keys and values, f32)", mib(cache as u64), a.context);
    Ok(())
}

/// Keys and values held at `context` positions: W per sliding layer, every position per
/// full layer.
pub fn cache_bytes(c: &dory::Config, context: usize) -> usize {
    let per_position = 2 * c.kv_width() * 4;
    c.layers
        .iter()
        .map(|k| match k {
            LayerKind::Sliding => context.min(c.window),
            LayerKind::Full => context,
        })
        .sum::<usize>()
        * per_position
}
