use mnem::vector::hnsw::Hnsw;
use std::time::Instant;
fn main() {
    let n: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let b = std::fs::read("/tmp/mnem-bench-vec/vectors-50000x384.f32").unwrap();
    let d: Vec<f32> = b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let mut h = Hnsw::new(384);
    let mut t = Vec::new();
    let s = Instant::now();
    for i in 0..n {
        t.clear();
        h.insert(&d[i * 384..(i + 1) * 384], &mut t);
    }
    let e = s.elapsed().as_secs_f64();
    println!("{n}: {:.3} s, {:.3} ms/vector", e, e * 1e3 / n as f64);
}
