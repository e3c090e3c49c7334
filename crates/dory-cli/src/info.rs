//! `dory info`: what a model is and what it costs.

use anyhow::{Context, Result};
use dory::Attention;

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
    dory::limits::option("--context", a.context, dory::limits::MAX_POSITIONS)?;
    let (model, device) = a.model.open()?;
    let session = a.model.session(&device, &model)?;
    let c = &model.config;
    let layers: Vec<&str> = c.layers.iter().map(|k| k.name()).collect();
    println!("model        {}", model.dir.display());
    println!("backend      {}", session.backend());
    println!(
        "shape        hidden {} · heads {} (kv {}) × {} · ffn {} · vocab {}",
        c.hidden, c.heads, c.kv_heads, c.head_dim, c.ffn, c.vocab_size
    );
    println!("block        [{}] × {} passes, window {}", layers.join(", "), c.passes, c.window);
    println!("rope         θ {} (full layers: {})", c.rope_theta, if c.rope_full { "rotated" } else { "not rotated" });
    println!("exit         {} (the default rule; --exit overrides it)", c.exit);
    if let Some(o) = &c.o1 {
        println!(
            "o1           sinks {} · window {} · landmarks {} · stride {} · rect {} · seal at {}",
            o.sinks, o.window, o.landmarks, o.stride, o.rect, o.seal_at
        );
    }
    println!("parameters   {} ({:.2} M)", c.parameters(), c.parameters() as f64 / 1e6);
    let format = match &c.quantization {
        Some(q) => format!("q8_0 in groups of {}, vectors {:?}", q.group, model.weights.dtype()),
        None => format!("{:?}", model.weights.dtype()),
    };
    let (held, mapped) = device.weight_bytes(&model);
    let mapped =
        if mapped > 0 { format!(" ({} of it the file's pages, mapped)", mib(mapped as u64)) } else { "".into() };
    println!(
        "weights      {} stored ({format}), {} as the backend holds them{mapped}",
        mib(model.weights.stored_bytes as u64),
        mib(held as u64),
    );
    // Both modes, the O(1) one with the settings the session would use.
    let o1 = match a.model.attention(c)? {
        Attention::O1(o) => o,
        Attention::Exact => c.o1.clone().unwrap_or_default(),
    };
    for attention in [Attention::Exact, Attention::O1(o1)] {
        let bytes = attention.cache_bytes(c, a.context).with_context(|| {
            format!("--context {}: the {} caches' size does not fit in a machine word", a.context, attention.name())
        })? as u64;
        let note = match &attention {
            Attention::O1(o) if a.context > o.seal_at => format!(" (sealed at {}: constant from there)", o.seal_at),
            Attention::O1(o) => format!(" (grows until the seal at {})", o.seal_at),
            Attention::Exact => " (grows with the context)".into(),
        };
        println!("caches {:<6}{} at context {}{note}", attention.name(), mib(bytes), a.context);
    }
    Ok(())
}
