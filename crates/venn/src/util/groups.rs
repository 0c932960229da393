//! Elements grouped by the group each belongs to: a counting sort, each group's elements
//! in element order.

/// Elements `0..n` grouped: group g's are `order[starts[g]..starts[g + 1]]`, ascending.
pub struct Groups {
    starts: Vec<u32>,
    order: Vec<u32>,
}

impl Groups {
    /// Element e in group `of[e]` (each below `groups`; fewer than 2^32 elements).
    pub fn new(of: &[u32], groups: usize) -> Groups {
        let mut starts = vec![0u32; groups + 1];
        of.iter().for_each(|&g| starts[g as usize + 1] += 1);
        (1..=groups).for_each(|g| starts[g] += starts[g - 1]);
        let mut next = starts.clone();
        let mut order = vec![0u32; of.len()];
        for (e, &g) in of.iter().enumerate() {
            order[next[g as usize] as usize] = e as u32;
            next[g as usize] += 1;
        }
        Groups { starts, order }
    }

    /// Group `g`'s elements.
    pub fn of(&self, g: usize) -> &[u32] {
        &self.order[self.starts[g] as usize..self.starts[g + 1] as usize]
    }

    /// Every element, group by group.
    pub fn order(&self) -> &[u32] {
        &self.order
    }

    /// Where each group's elements start in [`Groups::order`], and then their end.
    pub fn starts(&self) -> &[u32] {
        &self.starts
    }

    /// The memory it holds, in bytes.
    pub fn memory(&self) -> u64 {
        4 * (self.starts.capacity() + self.order.capacity()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_group_holds_its_elements_in_order() {
        let of = [2, 0, 2, 1, 0, 2];
        let g = Groups::new(&of, 4);
        assert_eq!(
            (g.of(0), g.of(1), g.of(2), g.of(3)),
            (&[1, 4][..], &[3][..], &[0, 2, 5][..], &[][..])
        );
        assert_eq!(
            (g.order(), g.starts()),
            (&[1, 4, 3, 0, 2, 5][..], &[0, 2, 3, 6, 6][..])
        );
    }
}
