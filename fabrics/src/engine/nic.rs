//! Host NICs: segmentation of flows into packets and injection at the flow's allowed rate.
//!
//! A NIC serves its active flows round-robin, one packet per turn, skipping flows that their
//! congestion control holds back. Packets are cut just in time (when the port is free), so
//! a NIC holds no packet queue and a long flow costs no memory up front.

use super::device::DeviceModel;
use super::{Ev, Fabric, Packet, PacketKind};
use crate::models::CongestionControl;
use sim_core::{EventQueue, Scheduler, SimTime};

/// The base fabric's endpoint (`Device::OqHost`): this NIC, and delivery.
pub(super) struct OqHost;

impl DeviceModel for OqHost {
    #[inline]
    fn arrive<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, _p: u32, id: u32) {
        f.deliver(s, id);
    }
    #[inline]
    fn kick<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        let h = f.host_of_node[f.ports[p as usize].node as usize];
        f.nic_send(s, h);
    }
    #[inline]
    fn tx_done<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        f.ports[p as usize].txdone_pending = false;
        f.try_start_queued(s, p);
    }
    #[inline]
    fn flow_started<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, h: u32, i: u32) {
        f.nics[h as usize].active.push_back(i);
        f.nic_send(s, h);
    }
    #[inline]
    fn nic_wake<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, h: u32) {
        f.nic_send(s, h);
    }
}

impl Fabric {
    /// Lets host `h`'s NIC send its next packet if its port is idle and a flow may send.
    pub(super) fn nic_send<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, h: u32) {
        let now = s.now();
        let Some(p) = self.nic_idle_port(s, h) else { return };
        // Round-robin: find the first eligible flow, rotating ineligible ones to the back.
        let n_active = self.nics[h as usize].active.len();
        let mut earliest = SimTime::MAX;
        for _ in 0..n_active {
            let Some(f) = self.nics[h as usize].active.pop_front() else {
                break;
            };
            let st = &self.flow_state[f as usize];
            if st.next_send_at > now {
                earliest = earliest.min(st.next_send_at);
                self.nics[h as usize].active.push_back(f);
                continue;
            }
            self.send_packet(s, h, p, f);
            return;
        }
        if earliest != SimTime::MAX {
            self.nic_wake_at(s, h, earliest);
        }
    }

    /// Cuts the next packet of flow `f` and starts it on port `p`.
    fn send_packet<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, h: u32, p: u32, f: u32) {
        let now = s.now();
        let id = self.cut_packet(now, f, 0);
        self.start_tx(s, p, id);
        let more = self.flow_state[f as usize].unsent_bytes > 0;
        let nic = &mut self.nics[h as usize];
        if more {
            nic.active.push_back(f);
        }
        if !nic.active.is_empty() {
            let at = self.ports[p as usize].busy_until;
            self.nic_wake_at(s, h, at);
        }
    }

    /// Cuts flow `f`'s next packet (payload up to the MTU) on virtual lane / priority `vl`,
    /// charges it to the flow's congestion control and counters, and returns its id.
    pub(super) fn cut_packet(&mut self, now: SimTime, f: u32, vl: u8) -> u32 {
        let mtu = self.cfg.mtu_bytes as u64;
        let header = self.cfg.header_bytes;
        let hash = self.flow_hash_of(f);
        let (dst, size) = (self.flows[f as usize].dst, self.flows[f as usize].size.0);
        let st = &mut self.flow_state[f as usize];
        // Byte offset of this packet in its flow (RoCEv2 queue pairs overwrite it with theirs).
        let offset = size - st.unsent_bytes;
        let payload = st.unsent_bytes.min(mtu) as u32;
        st.unsent_bytes -= payload as u64;
        let wire = payload + header;
        st.next_send_at = st.cc.on_send(now, wire);
        let rec = &mut self.records[f as usize];
        rec.packets_sent += 1;
        if rec.first_sent.is_none() {
            rec.first_sent = Some(now);
        }
        let index = (rec.packets_sent - 1) as u32;
        self.totals.packets_injected += 1;
        self.totals.payload_bytes_injected += payload as u64;
        self.packets.alloc(Packet {
            index,
            kind: PacketKind::Data,
            flow: f,
            dst_host: dst,
            payload_bytes: payload,
            wire_bytes: wire,
            flow_hash: hash,
            sent_at: now,
            aux: offset,
            vl,
            ..Packet::control()
        })
    }

    /// Host `h`'s port if it is idle now; otherwise makes sure the NIC wakes when it is free.
    pub(super) fn nic_idle_port<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, h: u32) -> Option<u32> {
        let p = self.nics[h as usize].port;
        let busy_until = self.ports[p as usize].busy_until;
        if busy_until > s.now() {
            self.nic_wake_at(s, h, busy_until);
            return None;
        }
        Some(p)
    }

    /// Makes sure host `h`'s NIC wakes at `at` (or earlier).
    pub(super) fn nic_wake_at<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, h: u32, at: SimTime) {
        let nic = &mut self.nics[h as usize];
        if nic.wake_at <= at {
            return;
        }
        nic.wake_at = at;
        let o = self.nic_origin(h);
        s.schedule(at, o, Ev::NicWake(h));
    }
}
