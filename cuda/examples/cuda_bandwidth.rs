//! Bandwidth of the CUDA providers against cudarc's raw memcpy, 1 KiB to
//! 256 MiB, in one run: `CudaUpload::upload` (upload, then synchronize) and
//! `CudaDownload::download` against `memcpy_htod` / `memcpy_dtoh` from
//! pageable and from pinned host memory into a preallocated buffer.
//!
//! `cargo run --release -p tenferro-transfer-harness --features cuda --example cuda_bandwidth [OUT.md]`
//!
//! Prints a markdown table (and writes it to OUT.md when given): per size
//! the median GB/s of each path and the ratios ours / raw (1.00 = as fast
//! as the raw copy; below 1 = slower). Without a usable device it prints
//! the reason and exits 0: nothing is measured, nothing is claimed.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use tenferro_tensor::{Tensor, TensorRead};
use tenferro_transfer_cuda::cuda_unavailable_reason;
use tenferro_transfer_cuda::{
    CudaDownload, CudaEndpoint, CudaUpload, Direction, HostMemory, RawCopies,
};
use tenferro_transfer_harness::announce_skip;

const KIB: usize = 1024;
const SIZES: [usize; 10] = [
    KIB,
    4 * KIB,
    16 * KIB,
    64 * KIB,
    256 * KIB,
    KIB * KIB,
    4 * KIB * KIB,
    16 * KIB * KIB,
    64 * KIB * KIB,
    256 * KIB * KIB,
];

/// Repetitions per measurement: many for small copies (latency-bound),
/// few for large ones, about 0.5 GiB moved per measurement at most.
fn repetitions(bytes: usize) -> usize {
    (512 * KIB * KIB / bytes).clamp(5, 200)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn gigabytes_per_second(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / time.as_secs_f64().max(1e-12) / 1e9
}

fn measure<E>(bytes: usize, mut once: impl FnMut() -> Result<Duration, E>) -> Result<f64, E> {
    once()?; // warm-up: first-touch allocation, context, staging buffers
    let times = (0..repetitions(bytes))
        .map(|_| once())
        .collect::<Result<Vec<_>, E>>()?;
    Ok(gigabytes_per_second(bytes, median(times)))
}

fn run() -> Result<String, Box<dyn std::error::Error>> {
    let endpoint = CudaEndpoint::open(0)?;
    let upload = CudaUpload::new(endpoint.clone());
    let download = CudaDownload::new(endpoint.clone());
    let mut table = String::from(
        "| size | upload GB/s | raw pageable | raw pinned | ours/pageable | ours/pinned | download GB/s | raw pageable | raw pinned | ours/pageable | ours/pinned |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for bytes in SIZES {
        let elements = bytes / 4;
        let host = Tensor::from_vec_col_major(vec![elements], vec![1.5_f32; elements])?;
        let up = measure(bytes, || {
            let start = Instant::now();
            upload
                .upload(&TensorRead::from_tensor(&host))
                .map(|_| start.elapsed())
        })?;
        let device = upload.upload(&TensorRead::from_tensor(&host))?;
        let down = measure(bytes, || {
            let start = Instant::now();
            download
                .download(&TensorRead::from_tensor(&device))
                .map(|_| start.elapsed())
        })?;
        let mut raw = RawCopies::new(0, bytes)?;
        let mut raw_rate = |memory, direction| measure(bytes, || raw.copy(memory, direction));
        let up_pageable = raw_rate(HostMemory::Pageable, Direction::Upload)?;
        let up_pinned = raw_rate(HostMemory::Pinned, Direction::Upload)?;
        let down_pageable = raw_rate(HostMemory::Pageable, Direction::Download)?;
        let down_pinned = raw_rate(HostMemory::Pinned, Direction::Download)?;
        let size = if bytes >= KIB * KIB {
            format!("{} MiB", bytes / KIB / KIB)
        } else {
            format!("{} KiB", bytes / KIB)
        };
        table.push_str(&format!(
            "| {size} | {up:.2} | {up_pageable:.2} | {up_pinned:.2} | {:.2} | {:.2} | {down:.2} | {down_pageable:.2} | {down_pinned:.2} | {:.2} | {:.2} |\n",
            up / up_pageable,
            up / up_pinned,
            down / down_pageable,
            down / down_pinned,
        ));
        eprintln!("measured {size}");
    }
    Ok(table)
}

fn main() -> ExitCode {
    if let Some(reason) = cuda_unavailable_reason() {
        announce_skip("cuda_bandwidth", &reason);
        return ExitCode::SUCCESS;
    }
    match run() {
        Ok(table) => {
            print!("{table}");
            if let Some(path) = std::env::args().nth(1)
                && let Err(error) = std::fs::write(&path, &table)
            {
                eprintln!("error: cannot write {path}: {error}");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            let mut source = error.source();
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::FAILURE
        }
    }
}
