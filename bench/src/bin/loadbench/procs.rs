//! What a server's processes use, read from `/proc`: CPU time and resident memory of a
//! process and all its descendants (a Python server may run its work in child processes),
//! and CPU time of given Postgres backends.

use std::collections::{HashMap, HashSet};

/// Clock ticks per second of `/proc/<pid>/stat` (`CLK_TCK`, 100 on Linux).
const TICKS_PER_S: f64 = 100.0;

/// One process's `/proc/<pid>/stat` fields after the command name.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// CPU ticks of one process: its own (user + system) and those of its children it has
/// reaped (so a child that exited during a window still counts, through its parent).
fn ticks(pid: u32) -> Option<u64> {
    stat_ticks(pid, &[11, 12, 13, 14])
}

/// The sum of the given tick fields of `/proc/<pid>/stat` (counted after the command name:
/// 11 user, 12 system, 13 and 14 the reaped children's).
fn stat_ticks(pid: u32, fields: &[usize]) -> Option<u64> {
    let f = stat_fields(pid)?;
    Some(
        fields
            .iter()
            .map(|&i| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0))
            .sum(),
    )
}

/// `pid` and every process below it, as `/proc` shows them now.
pub(crate) fn tree(roots: &[u32]) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(ppid) =
                stat_fields(pid).and_then(|f| f.get(1).and_then(|p| p.parse::<u32>().ok()))
            {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut seen: HashSet<u32> = HashSet::new();
    let mut todo: Vec<u32> = roots.to_vec();
    while let Some(p) = todo.pop() {
        if seen.insert(p) {
            todo.extend(children.get(&p).into_iter().flatten().copied());
        }
    }
    let mut out: Vec<u32> = seen.into_iter().collect();
    out.sort_unstable();
    out
}

/// CPU seconds used so far by the processes under `roots`.
pub(crate) fn tree_cpu_s(roots: &[u32]) -> f64 {
    tree(roots).into_iter().filter_map(ticks).sum::<u64>() as f64 / TICKS_PER_S
}

/// CPU seconds used so far by this process alone (user + system; not its children, such
/// as the server it started).
pub(crate) fn own_cpu_s() -> f64 {
    stat_ticks(std::process::id(), &[11, 12]).unwrap_or(0) as f64 / TICKS_PER_S
}

/// Resident memory of the processes under `roots`, KiB (shared pages counted in each).
pub(crate) fn tree_rss_kib(roots: &[u32]) -> u64 {
    tree(roots)
        .into_iter()
        .filter_map(|pid| {
            let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .sum()
}

/// CPU ticks of each of the given processes (those still there).
pub(crate) fn each_ticks(pids: &[u32]) -> HashMap<u32, u64> {
    pids.iter()
        .filter_map(|&p| ticks(p).map(|t| (p, t)))
        .collect()
}

/// CPU seconds the processes of `after` used since `before` was read: a process that was
/// not there before counts whole (it started meanwhile); one that is gone is lost.
pub(crate) fn cpu_s_between(before: &HashMap<u32, u64>, after: &HashMap<u32, u64>) -> f64 {
    after
        .iter()
        .map(|(pid, t)| t.saturating_sub(before.get(pid).copied().unwrap_or(0)))
        .sum::<u64>() as f64
        / TICKS_PER_S
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_tree_holds_its_children_and_their_cpu() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("spawn sleep");
        let pids = tree(&[me]);
        assert!(pids.contains(&me));
        assert!(pids.contains(&child.id()), "{pids:?}");
        // Burn some CPU so the tree's time is measurable.
        let t0 = std::time::Instant::now();
        let mut x = 0u64;
        while t0.elapsed().as_millis() < 100 {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        assert!(x != 1);
        assert!(tree_cpu_s(&[me]) > 0.0);
        assert!(own_cpu_s() > 0.0 && own_cpu_s() <= tree_cpu_s(&[me]));
        assert!(tree_rss_kib(&[me]) > 0);
        let before = each_ticks(&[me]);
        let after = each_ticks(&[me, child.id()]);
        assert!(cpu_s_between(&before, &after) >= 0.0);
        let _ = child.kill();
        let _ = child.wait();
    }
}
