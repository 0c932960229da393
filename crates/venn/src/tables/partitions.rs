//! Records spread over 2^bits partitions as they are produced, for a partitioned join: each
//! partition's records go to fixed-size chunks of one arena, so writing is sequential per
//! partition, nothing is copied as a partition grows, and a partition is later read back
//! chunk by chunk, small enough to be joined in cache.

/// Records per chunk.
const CHUNK: usize = 512;

/// Records of type `T` by partition, up to a capacity fixed at creation.
pub struct Partitions<T> {
    /// The arena: chunks of [`CHUNK`] records.
    data: Vec<T>,
    /// Each partition's chunks, in order.
    chunks: Vec<Vec<u32>>,
    /// Where each partition's next record goes, and where its last chunk ends.
    tail: Vec<(usize, usize)>,
    /// The next unused chunk.
    next_chunk: usize,
}

impl<T: Copy + Default> Partitions<T> {
    /// Room for `capacity` records in `count` partitions. (The arena holds one partly
    /// filled chunk per partition besides the records; its pages are first touched when
    /// written.)
    pub fn new(count: usize, capacity: usize) -> Self {
        let chunks = capacity.div_ceil(CHUNK) + count;
        Partitions {
            data: vec![T::default(); chunks * CHUNK],
            chunks: vec![Vec::new(); count],
            tail: vec![(0, 0); count],
            next_chunk: 0,
        }
    }

    /// The number of partitions.
    pub fn count(&self) -> usize {
        self.chunks.len()
    }

    /// Appends `record` to partition `p`. Panics past the capacity.
    #[inline]
    pub fn push(&mut self, p: usize, record: T) {
        let (at, end) = &mut self.tail[p];
        if *at == *end {
            let c = self.next_chunk;
            assert!(
                (c + 1) * CHUNK <= self.data.len(),
                "records past the capacity"
            );
            self.next_chunk += 1;
            self.chunks[p].push(c as u32);
            (*at, *end) = (c * CHUNK, (c + 1) * CHUNK);
        }
        self.data[*at] = record;
        *at += 1;
    }

    /// The records of partition `p`, in the order they came.
    pub fn records(&self, p: usize) -> impl Iterator<Item = T> + '_ {
        let last = self.chunks[p].len();
        self.chunks[p].iter().enumerate().flat_map(move |(i, &c)| {
            let start = c as usize * CHUNK;
            let end = if i + 1 == last {
                self.tail[p].0
            } else {
                start + CHUNK
            };
            self.data[start..end].iter().copied()
        })
    }

    /// The number of records in partition `p`.
    pub fn len(&self, p: usize) -> usize {
        let (at, end) = self.tail[p];
        self.chunks[p].len() * CHUNK - (end - at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_partition_gives_back_its_records_in_order() {
        let count = 5;
        let records: Vec<(usize, u64)> = (0..3000u64)
            .map(|i| ((i * i % 7) as usize % count, i))
            .collect();
        let mut parts = Partitions::new(count, records.len());
        for &(p, r) in &records {
            parts.push(p, r);
        }
        for p in 0..count {
            let expected: Vec<u64> = records.iter().filter(|r| r.0 == p).map(|r| r.1).collect();
            assert_eq!(parts.records(p).collect::<Vec<_>>(), expected);
            assert_eq!(parts.len(p), expected.len());
        }
    }

    #[test]
    fn partitions_of_whole_chunks() {
        for len in [CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK] {
            let mut parts = Partitions::new(2, 2 * len);
            for i in 0..len as u64 {
                parts.push(1, i);
                parts.push(0, i + 1000);
            }
            assert_eq!((parts.len(0), parts.len(1)), (len, len));
            assert!(parts.records(1).eq(0..len as u64));
            assert!(parts.records(0).eq(1000..1000 + len as u64));
        }
    }

    #[test]
    #[should_panic(expected = "past the capacity")]
    fn more_records_than_the_capacity_panic() {
        let mut parts = Partitions::new(1, CHUNK);
        for i in 0..2 * CHUNK as u64 + 1 {
            parts.push(0, i);
        }
    }
}
