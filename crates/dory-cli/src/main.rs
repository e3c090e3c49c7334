//! The `dory` command: a thin client of the engine library.

mod bench;
mod common;
mod device;
mod generate;
mod info;
mod init;
mod ppl;
mod quantize;
mod serve;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "dory", version, about = "Run Dory language models: looped, hyperspherical transformers")]
struct Cli {
    /// Worker threads for the CPU backend (default: every core).
    #[arg(long, global = true)]
    threads: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate text from a prompt, streaming it as it is produced.
    Generate(generate::Args),
    /// Describe a model: its config, parameters, and the bytes of weights and caches.
    Info(info::Args),
    /// Perplexity of a text file.
    Ppl(ppl::Args),
    /// Write a random model folder (for tests and benchmarks).
    Init(init::Args),
    /// Prompt-processing and generation speed, with repetitions.
    Bench(bench::Args),
    /// Write an 8-bit (q8_0) copy of a model folder (docs/SEMANTICS.md).
    Quantize(quantize::Args),
    /// Serve the model over HTTP: an OpenAI-compatible API and a web page (docs/SERVER.md).
    Serve(serve::Args),
}

fn main() -> std::process::ExitCode {
    // Mesa's implicit Vulkan device-select layer connects to a Wayland display to order the
    // devices, which on a headless machine prints "XDG_RUNTIME_DIR is invalid" twice per
    // run while `--backend auto` looks for a GPU; dory orders adapters itself, so the layer
    // is off unless the user set it. Set here, before any thread exists.
    if std::env::var_os("NODEVICE_SELECT").is_none() {
        std::env::set_var("NODEVICE_SELECT", "1");
    }
    let cli = Cli::parse();
    let run = || -> anyhow::Result<()> {
        let mut b = rayon::ThreadPoolBuilder::new();
        if let Some(n) = cli.threads {
            dory::limits::option("--threads", n, dory::limits::MAX_THREADS)?;
            b = b.num_threads(n);
        }
        // Every command runs on the pool, as one of its threads (why: `dory::Cpu`).
        let pool = b.build()?;
        pool.install(|| match &cli.command {
            Command::Generate(a) => generate::run(a),
            Command::Info(a) => info::run(a),
            Command::Ppl(a) => ppl::run(a),
            Command::Init(a) => init::run(a),
            Command::Bench(a) => bench::run(a),
            Command::Quantize(a) => quantize::run(a),
            Command::Serve(a) => serve::run(a),
        })
    };
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
