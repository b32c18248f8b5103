//! A hierarchical navigable small world graph (Malkov and Yashunin) over unit vectors,
//! cosine similarity. Deleted nodes stay in the graph as waypoints and are filtered from
//! results, so deletes never degrade connectivity; the owner rebuilds when they dominate.
//! Levels come from a seeded generator, so the same inserts build the same graph.
//! A search whose filter rejects most of what the beam reaches answers by an exact scan.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

const M: usize = 16;
const M0: usize = 2 * M;
const EF_CONSTRUCTION: usize = 128;
/// The highest level a node gets (its level is drawn, then capped).
pub const MAX_LEVEL: usize = 16;
/// The most links a node keeps on one level (level 0 keeps this many, others half).
pub const MAX_LINKS: usize = M0;

#[derive(Clone, Copy, PartialEq)]
struct Cand {
    dist: f32,
    node: u32,
}
impl Eq for Cand {}
impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Cand {
    fn cmp(&self, o: &Self) -> Ordering {
        self.dist.total_cmp(&o.dist).then(self.node.cmp(&o.node))
    }
}

pub struct Hnsw {
    dim: usize,
    data: Vec<f32>,
    links: Vec<Vec<Vec<u32>>>,
    deleted: Vec<bool>,
    live: usize,
    entry: Option<u32>,
    top: usize,
    rng: u64,
}

/// Dot product summed in a fixed order (sixteen lanes, then a fixed tree, then the tail):
/// the same bits on every CPU, so the same inserts build the same graph. Distances are most
/// of a graph's build, so the lanes run on the widest vector unit the CPU has, found at run
/// time: floating-point adds and multiplies are never reordered or fused by the compiler,
/// so each lane's sum has the same bits whatever the width of the unit.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    let acc = if std::arch::is_x86_feature_detected!("avx512f") {
        #[allow(unsafe_code)]
        // SAFETY: the CPU has AVX-512F (just checked), all `lanes_avx512` asks of it.
        unsafe {
            lanes_avx512(a, b)
        }
    } else if std::arch::is_x86_feature_detected!("avx2") {
        #[allow(unsafe_code)]
        // SAFETY: the CPU has AVX2 (just checked), all `lanes_avx2` asks of it.
        unsafe {
            lanes_avx2(a, b)
        }
    } else {
        lanes_baseline(a, b)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let acc = lanes_baseline(a, b);
    let n = a.len().min(b.len()) / 16 * 16;
    let mut l = [0f32; 4];
    for (i, x) in l.iter_mut().enumerate() {
        *x = (acc[i] + acc[i + 8]) + (acc[i + 4] + acc[i + 12]);
    }
    let mut s = (l[0] + l[2]) + (l[1] + l[3]);
    for (x, y) in a[n..].iter().zip(&b[n..]) {
        s += x * y;
    }
    s
}

/// `dot`'s sixteen lane sums (lane `i` sums the products at `16k + i`), in a function of
/// their own: inlined beside the reduction after them, the compiler vectorized them two lanes
/// at a time; alone, one vector operation covers 4 lanes (SSE2), 8 (AVX2) or 16 (AVX-512).
#[inline(always)]
fn lanes(a: &[f32], b: &[f32]) -> [f32; 16] {
    let mut acc = [0f32; 16];
    for (x, y) in a.chunks_exact(16).zip(b.chunks_exact(16)) {
        let (x, y): (&[f32; 16], &[f32; 16]) = (x.try_into().expect("16"), y.try_into().expect("16"));
        for i in 0..16 {
            acc[i] += x[i] * y[i];
        }
    }
    acc
}

#[inline(never)]
fn lanes_baseline(a: &[f32], b: &[f32]) -> [f32; 16] {
    lanes(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline(never)]
fn lanes_avx2(a: &[f32], b: &[f32]) -> [f32; 16] {
    lanes(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline(never)]
fn lanes_avx512(a: &[f32], b: &[f32]) -> [f32; 16] {
    lanes(a, b)
}

/// Nodes seen by one layer search: a bitset, cheaper than hashing on the hot path.
struct Visited(Vec<u64>);

impl Visited {
    fn new(nodes: usize) -> Visited {
        Visited(vec![0; nodes.div_ceil(64)])
    }
    /// Mark `n`; false when it was marked already.
    fn insert(&mut self, n: u32) -> bool {
        let (w, bit) = (n as usize / 64, 1u64 << (n % 64));
        let new = self.0[w] & bit == 0;
        self.0[w] |= bit;
        new
    }
}

/// Scale to unit length, so that cosine similarity is a dot product.
pub fn normalize(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    v.iter().map(|x| (f64::from(*x) / norm) as f32).collect()
}

impl Hnsw {
    pub fn new(dim: usize) -> Hnsw {
        Hnsw {
            dim,
            data: Vec::new(),
            links: Vec::new(),
            deleted: Vec::new(),
            live: 0,
            entry: None,
            top: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// A graph from its persisted parts; `links[n][l]` are node `n`'s neighbours on level `l`.
    pub fn from_parts(
        dim: usize,
        data: Vec<f32>,
        links: Vec<Vec<Vec<u32>>>,
        deleted: Vec<bool>,
        entry: Option<u32>,
        top: usize,
        rng: u64,
    ) -> Hnsw {
        let live = deleted.iter().filter(|d| !**d).count();
        Hnsw { dim, data, links, deleted, live, entry, top, rng }
    }

    /// The unit vector of node `n`.
    pub fn vector(&self, n: u32) -> &[f32] {
        self.vec(n)
    }
    /// Node `n`'s neighbours, by level.
    pub fn links(&self, n: u32) -> &[Vec<u32>] {
        &self.links[n as usize]
    }
    pub fn is_deleted(&self, n: u32) -> bool {
        self.deleted[n as usize]
    }
    pub fn entry(&self) -> Option<u32> {
        self.entry
    }
    pub fn top(&self) -> usize {
        self.top
    }
    /// The level generator's state: persisted, so that a reloaded graph goes on drawing
    /// the levels the never-unloaded one would.
    pub fn rng_state(&self) -> u64 {
        self.rng
    }
    /// Bytes of heap this graph holds (vectors, link lists, flags).
    pub fn heap_bytes(&self) -> usize {
        let lists: usize =
            self.links.iter().map(|l| 24 * l.capacity() + l.iter().map(|x| 4 * x.capacity()).sum::<usize>()).sum();
        4 * self.data.capacity() + 24 * self.links.capacity() + lists + self.deleted.capacity()
    }

    pub fn dim(&self) -> usize {
        self.dim
    }
    pub fn len(&self) -> usize {
        self.deleted.len()
    }
    pub fn live(&self) -> usize {
        self.live
    }
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    fn vec(&self, n: u32) -> &[f32] {
        let i = n as usize * self.dim;
        &self.data[i..i + self.dim]
    }

    fn dist(&self, q: &[f32], n: u32) -> f32 {
        1.0 - dot(q, self.vec(n))
    }

    fn random_level(&mut self) -> usize {
        // xorshift64*; level ~ floor(-ln(U) / ln(M)).
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let u = ((r >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        ((-u.ln()) / (M as f64).ln()) as usize
    }

    /// Insert a unit vector; returns its node number. Every node whose links change (the
    /// new one and the neighbours that link back to it) is pushed to `touched`.
    pub fn insert(&mut self, v: &[f32], touched: &mut Vec<u32>) -> u32 {
        assert_eq!(v.len(), self.dim, "caller checks the dimension");
        let node = u32::try_from(self.deleted.len()).expect("fewer than 2^32 vectors");
        touched.push(node);
        let level = self.random_level().min(MAX_LEVEL);
        self.data.extend_from_slice(v);
        self.links.push(vec![Vec::new(); level + 1]);
        self.deleted.push(false);
        self.live += 1;
        let Some(mut ep) = self.entry else {
            self.entry = Some(node);
            self.top = level;
            return node;
        };
        for l in (level + 1..=self.top).rev() {
            ep = self.greedy(v, ep, l);
        }
        let mut eps = vec![ep];
        for l in (0..=level.min(self.top)).rev() {
            let found = self.search_layer(v, &eps, EF_CONSTRUCTION, l);
            let cap = if l == 0 { M0 } else { M };
            let chosen = self.select(&found, M, true);
            self.links[node as usize][l] = chosen.clone();
            for &nb in &chosen {
                touched.push(nb);
                let list = &mut self.links[nb as usize][l];
                list.push(node);
                if list.len() > cap {
                    let base = self.vec(nb).to_vec();
                    let mut c: Vec<Cand> = self.links[nb as usize][l]
                        .iter()
                        .map(|&x| Cand { dist: self.dist(&base, x), node: x })
                        .collect();
                    c.sort();
                    self.links[nb as usize][l] = self.select(&c, cap, false);
                }
            }
            eps = found.iter().map(|c| c.node).collect();
        }
        if level > self.top {
            self.top = level;
            self.entry = Some(node);
        }
        node
    }

    /// The neighbour-selection heuristic: keep a candidate only if it is closer to the base
    /// than to every neighbour kept so far (spreads links across directions), then, with
    /// `fill`, fill up with the nearest of the rest. `sorted` is nearest first. A full list
    /// pruned without filling gets room again, so the next links to it are appended rather
    /// than re-pruned each time (pruning costs a distance per link pair).
    fn select(&self, sorted: &[Cand], m: usize, fill: bool) -> Vec<u32> {
        let mut kept: Vec<u32> = Vec::with_capacity(m);
        let mut rest = Vec::new();
        for c in sorted {
            if kept.len() == m {
                break;
            }
            let v = self.vec(c.node);
            if kept.iter().all(|&k| self.dist(v, k) > c.dist) {
                kept.push(c.node);
            } else {
                rest.push(c.node);
            }
        }
        for r in rest {
            if kept.len() == m || !fill {
                break;
            }
            kept.push(r);
        }
        kept
    }

    /// Read one value per cache line of each node's vector before any distance is
    /// computed, so that their loads from memory overlap instead of each distance waiting
    /// for its own (safe code has no prefetch instruction; this took a fifth off the build).
    fn touch(&self, nodes: &[u32]) {
        let mut sums = [0f32; 4];
        for (i, &n) in nodes.iter().enumerate() {
            for x in self.vec(n).iter().step_by(16) {
                sums[i % 4] += x;
            }
        }
        std::hint::black_box(sums);
    }

    fn greedy(&self, q: &[f32], mut ep: u32, level: usize) -> u32 {
        let mut best = self.dist(q, ep);
        loop {
            let mut moved = false;
            for &nb in &self.links[ep as usize][level] {
                let d = self.dist(q, nb);
                if d < best {
                    best = d;
                    ep = nb;
                    moved = true;
                }
            }
            if !moved {
                return ep;
            }
        }
    }

    /// Best-first search of one layer; returns up to `ef` candidates, nearest first.
    fn search_layer(&self, q: &[f32], eps: &[u32], ef: usize, level: usize) -> Vec<Cand> {
        let mut visited = Visited::new(self.len());
        for &e in eps {
            visited.insert(e);
        }
        let mut frontier: BinaryHeap<std::cmp::Reverse<Cand>> = BinaryHeap::new();
        let mut best: BinaryHeap<Cand> = BinaryHeap::new();
        for &e in eps {
            let c = Cand { dist: self.dist(q, e), node: e };
            frontier.push(std::cmp::Reverse(c));
            best.push(c);
        }
        while best.len() > ef {
            best.pop();
        }
        let mut fresh = Vec::with_capacity(MAX_LINKS);
        while let Some(std::cmp::Reverse(c)) = frontier.pop() {
            if best.len() >= ef && c.dist > best.peek().expect("non-empty").dist {
                break;
            }
            fresh.clear();
            fresh.extend(self.links[c.node as usize][level].iter().copied().filter(|&nb| visited.insert(nb)));
            self.touch(&fresh);
            for &nb in &fresh {
                let d = self.dist(q, nb);
                if best.len() < ef || d < best.peek().expect("non-empty").dist {
                    let n = Cand { dist: d, node: nb };
                    frontier.push(std::cmp::Reverse(n));
                    best.push(n);
                    if best.len() > ef {
                        best.pop();
                    }
                }
            }
        }
        best.into_sorted_vec()
    }

    pub fn delete(&mut self, node: u32) {
        if let Some(d) = self.deleted.get_mut(node as usize) {
            if !*d {
                *d = true;
                self.live -= 1;
            }
        }
    }

    /// Up to `k` live nodes nearest to unit vector `q` that `visible` and `keep` accept,
    /// with their cosine similarity, best first (ties by node number). `ef` is the first
    /// beam width. The beam widens while deleted or invisible nodes eat it; when `keep`
    /// rejects more than 7 in 8 of the visible nodes the beam reaches, widening would visit
    /// most of the graph anyway, so an exact scan answers instead.
    pub fn search(
        &self,
        q: &[f32],
        k: usize,
        ef: usize,
        visible: impl Fn(u32) -> bool,
        mut keep: impl FnMut(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        let Some(mut ep) = self.entry else { return Vec::new() };
        if k == 0 {
            return Vec::new();
        }
        for l in (1..=self.top).rev() {
            ep = self.greedy(q, ep, l);
        }
        // `keep` may be costly (a record read): ask once per node.
        let mut kept: std::collections::HashMap<u32, bool> = std::collections::HashMap::new();
        let mut ef = ef.max(k);
        loop {
            let found = self.search_layer(q, &[ep], ef, 0);
            let exhausted = found.len() < ef;
            let (mut examined, mut out) = (0usize, Vec::new());
            for c in &found {
                if self.deleted[c.node as usize] || !visible(c.node) {
                    continue;
                }
                examined += 1;
                if *kept.entry(c.node).or_insert_with(|| keep(c.node)) {
                    out.push((c.node, 1.0 - c.dist));
                    if out.len() == k {
                        break;
                    }
                }
            }
            if out.len() >= k || exhausted || ef >= self.len() {
                return out;
            }
            if out.len() * 8 < examined {
                return self.exact(q, k, visible, |n| *kept.entry(n).or_insert_with(|| keep(n)));
            }
            ef = ef.saturating_mul(2).min(self.len());
        }
    }

    /// `search` by brute force: every live visible node's distance, then `keep` asked in
    /// order of distance until `k` are accepted.
    pub fn exact(
        &self,
        q: &[f32],
        k: usize,
        visible: impl Fn(u32) -> bool,
        mut keep: impl FnMut(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        let mut all: Vec<Cand> = (0..self.len() as u32)
            .filter(|&n| !self.deleted[n as usize] && visible(n))
            .map(|n| Cand { dist: self.dist(q, n), node: n })
            .collect();
        all.sort_unstable();
        all.into_iter().filter(|c| keep(c.node)).take(k).map(|c| (c.node, 1.0 - c.dist)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values with widely different magnitudes and signs, so that any change in the order of
    /// the sums changes their bits.
    fn values(n: usize, seed: &mut u64) -> Vec<f32> {
        (0..n)
            .map(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                let m = (*seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
                m * 2f32.powi((*seed % 40) as i32 - 20)
            })
            .collect()
    }

    #[test]
    fn every_vector_unit_sums_the_bits_of_the_plain_lane_sums() {
        let mut seed = 0x2545_F491_4F6C_DD1D;
        type Lanes = fn(&[f32], &[f32]) -> [f32; 16];
        let mut variants: Vec<(&str, Lanes)> = vec![("baseline", lanes_baseline)];
        #[cfg(target_arch = "x86_64")]
        {
            #[allow(unsafe_code)]
            fn avx2(a: &[f32], b: &[f32]) -> [f32; 16] {
                // SAFETY: only pushed below when the CPU has AVX2.
                unsafe { lanes_avx2(a, b) }
            }
            #[allow(unsafe_code)]
            fn avx512(a: &[f32], b: &[f32]) -> [f32; 16] {
                // SAFETY: only pushed below when the CPU has AVX-512F.
                unsafe { lanes_avx512(a, b) }
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                variants.push(("avx2", avx2));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                variants.push(("avx512", avx512));
            }
        }
        for len in (0..=80).chain([383, 384, 768, 1536]) {
            for _ in 0..20 {
                let (a, b) = (values(len, &mut seed), values(len, &mut seed));
                // Lane by lane, in the plain order of the sums.
                let mut want = [0f32; 16];
                for (i, (x, y)) in a.iter().zip(&b).enumerate().take(len / 16 * 16) {
                    want[i % 16] += x * y;
                }
                for (name, f) in &variants {
                    assert_eq!(f(&a, &b).map(f32::to_bits), want.map(f32::to_bits), "{name}, length {len}");
                }
            }
        }
        // The order is the documented one, not merely some fixed one: lane sums, then the tree.
        let (a, b) = (values(33, &mut seed), values(33, &mut seed));
        let mut acc = [0f32; 16];
        for i in 0..32 {
            acc[i % 16] += a[i] * b[i];
        }
        let l: Vec<f32> = (0..4).map(|i| (acc[i] + acc[i + 8]) + (acc[i + 4] + acc[i + 12])).collect();
        let want = ((l[0] + l[2]) + (l[1] + l[3])) + a[32] * b[32];
        assert_eq!(dot(&a, &b).to_bits(), want.to_bits());
    }
}
