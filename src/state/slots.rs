//! Per-connection (or per-direction) accumulators by id, in order of first sight.
//!
//! Readers number connections 0, 1, 2, … (Wireshark's `tcp.stream`), so an id indexes a table;
//! ids far apart (frames built by hand) go to a map instead. Packets of one connection mostly
//! come in runs, so the last id's slot is kept and a run costs one comparison a packet.

use std::collections::HashMap;

/// Items of type `T` by `u64` key, made (`T::default()`) on first sight.
pub struct Slots<T> {
    /// Slot + 1 by key for keys below its length (0: not seen yet).
    dense: Vec<u32>,
    other: HashMap<u64, u32>,
    last: Option<(u64, usize)>,
    /// The keys, in order of first sight.
    pub keys: Vec<u64>,
    /// The items, in the order of `keys`.
    pub items: Vec<T>,
}

impl<T: Default> Slots<T> {
    /// Slots for keys up to `max_key`, fed `rows` rows: a table unless the keys run far beyond
    /// the rows (then a map, so a hand-made id like 2^31 costs no table of that size).
    pub fn new(max_key: Option<u64>, rows: usize) -> Self {
        let width = match max_key {
            Some(k) if k <= rows as u64 + 1024 => k as usize + 1,
            _ => 0,
        };
        Slots {
            dense: vec![0; width],
            other: HashMap::new(),
            last: None,
            keys: Vec::new(),
            items: Vec::new(),
        }
    }

    /// The index of `key`'s item in `items` (made on first sight).
    pub fn index(&mut self, key: u64) -> usize {
        if let Some((k, j)) = self.last {
            if k == key {
                return j;
            }
        }
        let id = match usize::try_from(key)
            .ok()
            .and_then(|i| self.dense.get_mut(i))
        {
            Some(id) => id,
            None => self.other.entry(key).or_insert(0),
        };
        if *id == 0 {
            self.keys.push(key);
            self.items.push(T::default());
            *id = self.items.len() as u32;
        }
        let j = *id as usize - 1;
        self.last = Some((key, j));
        j
    }

    /// `key`'s item (made on first sight).
    pub fn get(&mut self, key: u64) -> &mut T {
        let j = self.index(key);
        &mut self.items[j]
    }
}

#[cfg(test)]
mod tests {
    use super::Slots;

    #[test]
    fn table_and_map_give_first_sight_order() {
        for max in [Some(9), Some(1 << 40), None] {
            let mut s: Slots<u32> = Slots::new(max, 4);
            for k in [7, 7, 3, 1 << 40, 7, 3] {
                *s.get(k) += 1;
            }
            assert_eq!(s.keys, vec![7, 3, 1 << 40]);
            assert_eq!(s.items, vec![3, 2, 1]);
        }
    }
}
