//! Virtual output queues of crossbar devices (GPU hubs, NVSwitch chips): the choice of which
//! waiting packet an output takes, through the arbitration model of `models/crossbar/`, and the
//! crossbar's internal speed-up (see this module's parent docs, "Virtual output queues").

use super::*;

impl Fabric {
    /// The packet crossbar output `p` would take on `vl` now: its arbiter (`models/crossbar/`)
    /// looks at the first packets of the virtual output queue, oldest first, each with whether
    /// its input is free (always, with unlimited speed-up). The position goes to `xbar_pick`.
    /// With every input looked at busy, the port's timer is armed for when the earliest frees.
    pub(in crate::engine) fn xbar_candidate<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        p: u32,
        vl: u8,
    ) -> Option<u32> {
        let now = s.now();
        let unlimited = self.cfg.crossbar.speedup_percent.is_none();
        let ib = self.ibr();
        let o = ib.ix(p, vl);
        let first = ib.voq[o].front()?.id;
        if unlimited && ib.xbar.oldest_when_all_free() {
            self.ibs().xbar_pick[vl as usize] = 0;
            return Some(first);
        }
        let (out, earliest) = self.xbar_scan(p, vl, now);
        let ib = self.ibr();
        match ib.xbar.pick(out, &ib.xbar_waiting) {
            Some(k) => {
                let id = ib.voq[o][k].id;
                self.ibs().xbar_pick[vl as usize] = k;
                Some(id)
            }
            None => {
                if earliest != SimTime::MAX {
                    self.ib_arm_timer(s, p, earliest);
                }
                None
            }
        }
    }

    /// Fills `xbar_waiting` from output (`p`, `vl`)'s virtual output queue (the arbiter's scan
    /// length); returns the output and the earliest time a busy input looked at frees up.
    pub(in crate::engine) fn xbar_scan(&mut self, p: u32, vl: u8, now: SimTime) -> (Output, SimTime) {
        let node = self.ports[p as usize].node as usize;
        let base = self.port_base[node];
        let out = Output {
            port: p,
            local: p - base,
            n_ports: self.port_base[node + 1] - base,
        };
        let mut earliest = SimTime::MAX;
        let ib = self
            .ib
            .as_deref_mut()
            .expect("InfiniBand path runs only on an InfiniBand fabric");
        let o = ib.ix(p, vl);
        ib.xbar_waiting.clear();
        for e in ib.voq[o].iter().take(ib.xbar.scan_len()) {
            let x = e.ingress;
            let free_at = ib.xbar_free_at[x as usize];
            let free = free_at <= now;
            if !free {
                earliest = earliest.min(free_at);
            }
            ib.xbar_waiting.push(Waiting { input: x - base, free });
        }
        (out, earliest)
    }

    /// Crossbar output `p` takes the packet at `k` of its virtual output queue on `vl`, from
    /// input `x`: its arbiter moves its pointers (round-robin, iSLIP).
    pub(in crate::engine) fn xbar_granted(&mut self, p: u32, vl: u8, x: u32, now: SimTime) {
        if self.cfg.crossbar.arbitration == XbarArbitration::OldestFirst {
            return; // no state (and no scan on the hot path)
        }
        let k = self.ibr().xbar_pick[vl as usize];
        let (out, _) = self.xbar_scan(p, vl, now);
        let ib = self.ibs();
        let waiting = std::mem::take(&mut ib.xbar_waiting);
        ib.xbar.granted(out, &waiting, k, x);
        ib.xbar_waiting = waiting;
    }

    /// The oldest packet of output (`p`, `vl`)'s virtual output queue, if any, is at the head of
    /// the queue now: its HOQLife starts.
    pub(in crate::engine) fn ib_voq_new_head<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, vl: u8) {
        let ib = self.ibs();
        let o = ib.ix(p, vl);
        let Some(life) = ib.hoq_of_out(p) else { return };
        if ib.voq[o].is_empty() {
            ib.voq_deadline[o] = SimTime::MAX;
            return;
        }
        let deadline = s.now() + life;
        ib.voq_deadline[o] = deadline;
        self.ib_arm_timer(s, p, deadline);
    }

    /// HOQLife expired for the oldest packet of output (`p`, `vl`)'s virtual output queue: drop
    /// it, free its input buffer (credits go back upstream).
    pub(in crate::engine) fn ib_drop_voq_head<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, vl: u8) {
        let ib = self.ibs();
        let o = ib.ix(p, vl);
        let len_before = ib.voq[o].len();
        let VoqEntry { id, ingress: x } = ib.voq[o].pop_front().expect("a head to drop");
        let ib = self.ibs();
        let i = ib.ix(x, vl);
        ib.voq_unvote(i, p);
        self.ib_voq_left(s, (p, vl), x, 0, len_before);
        self.ib_hoq_drop(s, p, x, vl, id);
        self.ib_voq_new_head(s, p, vl);
    }
}
