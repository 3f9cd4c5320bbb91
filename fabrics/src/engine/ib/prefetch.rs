//! Prefetch hints for the credit path (the engine's prefetch pipeline, `Model::prefetch`;
//! no effect on results). On a large cluster (a 256-GPU AllReduce has 12,288 ports) every
//! per-lane array the credit path indexes is a cache miss, and the loads that miss are known
//! events ahead: a departure reads the output's arbiter, its queues' heads and the head
//! packet, then frees the input buffer the packet on the wire came from and returns its
//! credits; an arrival takes blocks of its input lane; an HCA's send reads its records, its
//! port's and its flows' (on its wake-up, or on an arrival that makes it send). Each stage
//! asks only for what the stage before brought in (stage 2, the port's own lines, is the
//! engine's). The per-lane and per-port records are one cache line each (`RxLane`,
//! `TxLane`, `IbOut`), so each is one request.

use super::*;
use sim_core::{prefetch, prefetch_at};

impl Fabric {
    /// Prefetch for the event on port `p` `stage + 1` events ahead.
    #[inline(always)]
    pub(in crate::engine) fn ib_prefetch(&self, ev: &Ev, p: u32, stage: u8) {
        let (Some(ib), Some(port)) = (self.ib.as_deref(), self.ports.get(p as usize)) else {
            return;
        };
        match ev {
            // Stage 2 reads nothing of the port, whose line it only asks for: a departure
            // elsewhere (a RoCEv2 device's, in a mixed run) just wastes a few prefetches.
            Ev::TxDone(_) if stage == 2 || port.device == Device::CreditSwitch => ib.prefetch_departure(self, p, stage),
            Ev::Arrive(_) if port.peer_device == Device::CreditSwitch && stage == 1 => {
                // The first lane of the input (the only one on a one-VL fabric, and on the
                // same line as the others).
                ib.prefetch_input_lane(port.peer_port, 0);
            }
            Ev::CtrlArrive(_) if port.peer_device == Device::CreditSwitch && stage < 2 => {
                // Credits arrive as an event only where the switch output at the far end waits
                // for them: it sends next. Its departure's records, one stage later than for
                // its own `TxDone` (the head packet, that departure's last stage, is left out).
                let x = port.peer_port;
                if stage == 1
                    && let Some(px) = self.ports.get(x as usize)
                {
                    px.prefetch_hot();
                }
                ib.prefetch_departure(self, x, stage + 1);
            }
            Ev::Arrive(_) | Ev::CtrlArrive(_) if port.peer_device == Device::CreditHost && stage < 2 => {
                // The HCA at the far end sends next: the flow-control packet returning the
                // credits of the data it takes in, or the data the credits arriving let go.
                // What its send reads, one stage later than for its own wake-up (its flows'
                // records, the last stage there, are left out).
                if let Some(&h) = self.host_of_node.get(port.peer_node as usize) {
                    self.ib_prefetch_hca(h, stage + 1);
                }
            }
            _ => {}
        }
    }

    /// Prefetch for HCA `h`'s wake-up (`Ev::NicWake`: an InfiniBand HCA sends its next packet
    /// when woken at the end of the last), `stage + 1` events ahead. `ib_nic_send` reads the
    /// HCA, its port's credit records, the flow-control packets on their way to its port and
    /// its flow queues, then the state of the flow at the front of each: the HCA's records
    /// and queue headers (stage 2), the port's records, control link and the queues' front
    /// slots (stage 1), the first flow-control packet and the front flows' records (stage 0).
    /// An arrival that makes the HCA send asks for stages 2 and 1 one event later
    /// ([`Fabric::ib_prefetch`]).
    #[inline]
    pub(in crate::engine) fn ib_prefetch_hca(&self, h: u32, stage: u8) {
        let (Some(ib), Some(nic)) = (self.ib.as_deref(), self.nics.get(h as usize)) else {
            return;
        };
        let queues = ib.host_queues(h);
        match stage {
            2 => {
                prefetch(nic);
                prefetch_at(&ib.cnp_queue, h as usize);
                if let Some(q) = queues.first() {
                    prefetch(q);
                }
            }
            1 => {
                let p = nic.port;
                if let Some(port) = self.ports.get(p as usize) {
                    prefetch(&port.busy_until);
                }
                prefetch_at(&ib.out, p as usize);
                // The flow-control packets on their way to the HCA's port (taken in when it
                // looks).
                prefetch_at(&self.ctrl_links, p as usize);
                prefetch_at(&ib.tx, ib.ix(p, 0));
                for q in queues {
                    if let Some(slot) = q.front() {
                        prefetch(slot);
                    }
                }
            }
            _ => {
                if let Some(slot) = self.ctrl_links.get(nic.port as usize).and_then(|l| l.pipe.head()) {
                    prefetch(slot);
                }
                for &f in queues.iter().filter_map(|q| q.front()) {
                    prefetch_at(&self.flow_state, f as usize);
                    prefetch_at(&self.flows, f as usize);
                    prefetch_at(&self.records, f as usize);
                }
            }
        }
    }
}

impl IbState {
    /// What a departure from switch port `p` (`ib_on_txdone`, `ib_switch_try_start`) reads:
    /// the port's records and the control link bringing its flow-control packets back
    /// (stage 2); the head's slot in its virtual output queue and the input lane the packet
    /// on the wire came from (stage 1); the head packet, the first of those flow-control
    /// packets and the control link the freed input's advertisement goes on (stage 0).
    #[inline]
    fn prefetch_departure(&self, f: &Fabric, p: u32, stage: u8) {
        let pu = p as usize;
        let o = self.ix(p, 0);
        let voq = self.voq_port.get(pu).copied().unwrap_or(false);
        match stage {
            2 => {
                prefetch_at(&self.out, pu);
                // The flow-control packets on their way to `p` (taken in when it looks).
                prefetch_at(&f.ctrl_links, pu);
                if voq {
                    prefetch_at(&self.voq, o);
                } else {
                    prefetch_at(&self.requests, o);
                }
                prefetch_at(&self.tx, o);
            }
            1 => {
                if let Some(&Some((x, vl, _))) = self.out.get(pu).map(|o| &o.tx_release) {
                    self.prefetch_input_lane(x, vl);
                    // Its flow-control packet queues on `x`'s transmitter, which, idle, first
                    // takes in the flow-control packets that have reached it and lends the
                    // lane its input's free pool.
                    prefetch_at(&self.out, x as usize);
                    prefetch_at(&f.ctrl_links, x as usize);
                    prefetch_at(&self.pool_free, x as usize);
                    if let Some(port) = f.ports.get(x as usize) {
                        // The flow-control packet advertising the freed space goes on `x`:
                        // its serializer and counters (its control pipe, at the far end
                        // named in this line, one stage on).
                        port.prefetch_hot();
                    }
                }
                if voq && let Some(slot) = self.voq.get(o).and_then(|q| q.front()) {
                    prefetch(slot);
                }
                if let Some(vl) = self.out.get(pu).and_then(|o| o.ctrl.front()) {
                    // A flow-control packet queued on `p` goes first: the lane it advertises,
                    // the port's pool and counters, and the link it goes on.
                    self.prefetch_input_lane(p, vl);
                    prefetch_at(&self.pool_free, pu);
                    if let Some(port) = f.ports.get(pu) {
                        prefetch_at(&f.ctrl_links, port.peer_port as usize);
                    }
                }
            }
            _ => {
                if let Some(slot) = f.ctrl_links.get(pu).and_then(|l| l.pipe.head()) {
                    prefetch(slot);
                }
                if let Some(&Some((x, _, _))) = self.out.get(pu).map(|o| &o.tx_release)
                    && let Some(port) = f.ports.get(x as usize)
                {
                    prefetch_at(&f.ctrl_links, port.peer_port as usize);
                }
                if voq && let Some(e) = self.voq.get(o).and_then(|q| q.front()) {
                    if let Some(pkt) = f.packets.slots_get(e.id) {
                        prefetch(pkt);
                    }
                    // The majority vote of the input it leaves.
                    prefetch_at(&self.voq_cause, self.ix(e.ingress, 0));
                }
            }
        }
    }

    /// What an arrival routed ahead to output lane (`out`, `vl`) touches there: the output's
    /// queue and byte counts and its credits (an idle output starts the packet at once; the
    /// engine asks for its `CtrlLink`). Not the port's own line: stage 0 asks for it too,
    /// and reading it here would wait for it.
    #[inline]
    pub(in crate::engine) fn prefetch_out_lane(&self, out: u32, vl: u8) {
        let o = self.ix(out, vl);
        if self.voq_port.get(out as usize).copied().unwrap_or(false) {
            prefetch_at(&self.voq, o);
        }
        prefetch_at(&self.tx, o);
        prefetch_at(&self.out, out as usize);
    }

    /// The receive-side records of input lane (`x`, `vl`): what a packet joining it or
    /// leaving it, and the flow-control update after, touch.
    #[inline]
    fn prefetch_input_lane(&self, x: u32, vl: u8) {
        let i = self.ix(x, vl);
        prefetch_at(&self.rx, i);
        // A crossbar node's input FIFOs stay empty; its lanes keep a majority vote instead.
        if self.voq_port.get(x as usize).copied().unwrap_or(false) {
            prefetch_at(&self.voq_cause, i);
        } else {
            prefetch_at(&self.inq, i);
        }
        if let Some(stats) = self.port_stats.get(x as usize) {
            prefetch(&stats.input_buffer_bytes);
        }
    }
}
