//! Service cluster IPs and node ports: the ranges (`--service-cluster-ip-range`,
//! `--service-node-port-range`), the choice of free addresses, and what the storage
//! claims of them look like (`registry::service_claims` writes them).
//!
//! What is taken is the union of: the claims in storage (an `IPAddress` object per
//! cluster IP, a key per node port), the addresses the stored Services hold (Services
//! stored before claims existed have none), and what writes in flight in this process
//! have reserved. One lock per process serialises the choice; a claim is created
//! if absent, so two API server instances on one storage never both get one address.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::api::StatusCause;

/// The IPv4 range cluster IPs come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    pub base: Ipv4Addr,
    pub prefix: u8,
}

impl IpRange {
    /// Parses a CIDR (`10.0.0.0/24`); the base must be the network address.
    pub fn parse(s: &str) -> Result<Self, String> {
        let (ip, prefix) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not a CIDR (address/prefix length)"))?;
        let base: Ipv4Addr = ip.parse().map_err(|_| {
            format!("{s:?}: only IPv4 ranges are supported by this server (not {ip:?})")
        })?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| *p <= 32)
            .ok_or_else(|| format!("{s:?}: invalid prefix length"))?;
        // Upstream refuses ranges larger than /12 for IPv4 (a 20-bit bitmap).
        if prefix < 12 {
            return Err(format!(
                "{s:?}: the range is too large: at most /12 (20 bits of hosts) is allowed"
            ));
        }
        if prefix > 30 {
            return Err(format!(
                "{s:?}: the range is too small: at least /30 is needed"
            ));
        }
        let range = IpRange { base, prefix };
        if u32::from(base) & !range.mask() != 0 {
            return Err(format!(
                "{s:?}: the address is not the network's first address"
            ));
        }
        Ok(range)
    }

    fn mask(&self) -> u32 {
        u32::MAX
            .checked_shl(32 - u32::from(self.prefix))
            .unwrap_or(0)
    }

    fn size(&self) -> u32 {
        1u32 << (32 - u32::from(self.prefix))
    }

    /// Whether `ip` may be a cluster IP: inside the range, neither its network nor its
    /// broadcast address.
    pub fn allocatable(&self, ip: Ipv4Addr) -> bool {
        let (ip, base) = (u32::from(ip), u32::from(self.base));
        ip & self.mask() == base && ip != base && ip != base + self.size() - 1
    }

    /// The first usable address (the `kubernetes` Service's).
    pub fn first(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.base) + 1)
    }

    fn nth(&self, offset: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.base) + offset)
    }
}

impl std::fmt::Display for IpRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.base, self.prefix)
    }
}

/// The node port range (`30000-32767`, inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    pub first: u16,
    pub last: u16,
}

impl PortRange {
    /// Parses `first-last` (or `first+count`, as upstream's flag also takes).
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?}: expected a port range such as 30000-32767");
        let (first, last) = if let Some((a, b)) = s.split_once('-') {
            let a: u16 = a.trim().parse().map_err(|_| bad())?;
            let b: u16 = b.trim().parse().map_err(|_| bad())?;
            (a, b)
        } else if let Some((a, n)) = s.split_once('+') {
            let a: u16 = a.trim().parse().map_err(|_| bad())?;
            let n: u16 = n.trim().parse().map_err(|_| bad())?;
            (a, a.checked_add(n).ok_or_else(bad)?)
        } else {
            let a: u16 = s.trim().parse().map_err(|_| bad())?;
            (a, a)
        };
        if first == 0 || last < first {
            return Err(bad());
        }
        Ok(PortRange { first, last })
    }

    pub fn contains(&self, port: u16) -> bool {
        (self.first..=self.last).contains(&port)
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

/// What is taken: cluster IPs and node ports.
#[derive(Debug, Default, Clone)]
pub struct Taken {
    pub ips: BTreeSet<Ipv4Addr>,
    pub ports: BTreeSet<u16>,
}

impl Taken {
    pub fn is_empty(&self) -> bool {
        self.ips.is_empty() && self.ports.is_empty()
    }

    /// What `self` holds that `other` does not.
    pub fn minus(&self, other: &Taken) -> Taken {
        Taken {
            ips: self.ips.difference(&other.ips).copied().collect(),
            ports: self.ports.difference(&other.ports).copied().collect(),
        }
    }

    /// What a Service holds.
    pub fn of_service(svc: &Value) -> Taken {
        let mut taken = Taken::default();
        taken.add_service(svc);
        taken
    }

    /// Adds what a stored Service holds.
    pub fn add_service(&mut self, svc: &Value) {
        let (ips, ports) = held(svc);
        self.ips.extend(ips);
        self.ports.extend(ports);
    }
}

/// The cluster IPs and node ports a Service holds.
pub fn held(svc: &Value) -> (Vec<Ipv4Addr>, Vec<u16>) {
    let spec = &svc["spec"];
    let mut ips: Vec<Ipv4Addr> = spec["clusterIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(std::iter::once(&spec["clusterIP"]))
        .filter_map(|v| v.as_str()?.parse().ok())
        .collect();
    ips.dedup();
    let ports = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| u16::try_from(p["nodePort"].as_u64()?).ok())
        .filter(|p| *p != 0)
        .collect();
    (ips, ports)
}

/// The allocator: the ranges, the lock that serialises choices, and what writes in
/// flight have reserved.
pub struct ServiceAllocator {
    pub cluster_ips: IpRange,
    pub node_ports: PortRange,
    pub(crate) choosing: tokio::sync::Mutex<()>,
    in_flight: Arc<Mutex<Taken>>,
}

impl Default for ServiceAllocator {
    fn default() -> Self {
        ServiceAllocator::new(
            IpRange::parse(DEFAULT_CLUSTER_IP_RANGE).expect("the default range parses"),
            PortRange::parse(DEFAULT_NODE_PORT_RANGE).expect("the default range parses"),
        )
    }
}

/// kube-apiserver's defaults.
pub const DEFAULT_CLUSTER_IP_RANGE: &str = "10.0.0.0/24";
pub const DEFAULT_NODE_PORT_RANGE: &str = "30000-32767";

/// Addresses held for a write in flight; released when dropped.
pub struct Reservation {
    taken: Taken,
    in_flight: Arc<Mutex<Taken>>,
}

impl Reservation {
    /// The addresses this reservation holds: what the write takes that the stored
    /// object did not hold already.
    pub fn taken(&self) -> &Taken {
        &self.taken
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        for ip in &self.taken.ips {
            in_flight.ips.remove(ip);
        }
        for port in &self.taken.ports {
            in_flight.ports.remove(port);
        }
    }
}

fn service_type(svc: &Value) -> &str {
    svc["spec"]["type"].as_str().unwrap_or("ClusterIP")
}

fn needs_node_ports(svc: &Value) -> bool {
    match service_type(svc) {
        "NodePort" => true,
        "LoadBalancer" => svc["spec"]["allocateLoadBalancerNodePorts"] != json!(false),
        _ => false,
    }
}

impl ServiceAllocator {
    pub fn new(cluster_ips: IpRange, node_ports: PortRange) -> Self {
        ServiceAllocator {
            cluster_ips,
            node_ports,
            choosing: Default::default(),
            in_flight: Default::default(),
        }
    }

    /// What writes in flight hold now. Taken (under `choosing`) *before* the stored
    /// Services are read: a write that finishes between the two is then in this copy
    /// or in the read, never in neither.
    pub fn in_flight(&self) -> Taken {
        self.in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Fills in and checks `svc`'s cluster IP and node ports against `stored` (what the
    /// stored Services hold, `old` among them on update) and the reservations in flight;
    /// the caller holds `choosing`. `old` is the stored object on update: what it
    /// already holds stays its own.
    pub fn assign(
        &self,
        svc: &mut Value,
        old: Option<&Value>,
        mut stored: Taken,
    ) -> Result<Reservation, Vec<StatusCause>> {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        stored.ips.extend(in_flight.ips.iter().copied());
        stored.ports.extend(in_flight.ports.iter().copied());
        let (own_ips, own_ports) = old.map(held).unwrap_or_default();
        let mut mine = Taken::default();
        let mut causes = Vec::new();
        if service_type(svc) != "ExternalName" {
            let spec = &mut svc["spec"];
            let requested = spec["clusterIP"]
                .as_str()
                .filter(|s| !s.is_empty())
                .or_else(|| spec["clusterIPs"][0].as_str().filter(|s| !s.is_empty()))
                .map(str::to_string);
            match requested.as_deref() {
                Some("None") => {
                    spec["clusterIP"] = json!("None");
                    spec["clusterIPs"] = json!(["None"]);
                }
                Some(ip) => {
                    let quoted = format!("[]string{{{ip:?}}}");
                    match ip.parse::<Ipv4Addr>() {
                        Err(_) => causes.push(StatusCause::invalid(
                            "spec.clusterIPs[0]",
                            ip,
                            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                        )),
                        Ok(addr) if own_ips.contains(&addr) => {}
                        Ok(addr) if !self.cluster_ips.allocatable(addr) => {
                            causes.push(invalid_shown(
                                "spec.clusterIPs",
                                &quoted,
                                &format!("failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. The range of valid IPs is {}", self.cluster_ips),
                            ))
                        }
                        Ok(addr) if stored.ips.contains(&addr) => causes.push(ip_taken(addr)),
                        Ok(addr) => {
                            mine.ips.insert(addr);
                        }
                    }
                    spec["clusterIP"] = json!(ip);
                    spec["clusterIPs"] = json!([ip]);
                }
                None => match self.free_ip(&stored) {
                    Some(addr) => {
                        mine.ips.insert(addr);
                        spec["clusterIP"] = json!(addr.to_string());
                        spec["clusterIPs"] = json!([addr.to_string()]);
                    }
                    None => causes.push(invalid_shown(
                        "spec.clusterIPs",
                        "[]string{}",
                        &format!(
                            "failed to allocate a serviceIP: range is full ({})",
                            self.cluster_ips
                        ),
                    )),
                },
            }
        }
        if needs_node_ports(svc) {
            let mut used = stored.ports.clone();
            let count = svc["spec"]["ports"].as_array().map_or(0, Vec::len);
            for i in 0..count {
                let port = &mut svc["spec"]["ports"][i];
                match port["nodePort"].as_u64().filter(|p| *p != 0) {
                    Some(p) => {
                        let field = format!("spec.ports[{i}].nodePort");
                        let valid = u16::try_from(p).ok();
                        match valid {
                            Some(p) if own_ports.contains(&p) => {}
                            Some(p) if !self.node_ports.contains(p) => {
                                causes.push(StatusCause::invalid_value(
                                    &field,
                                    &json!(p),
                                    &format!("provided port is not in the valid range. The range of valid ports is {}", self.node_ports),
                                ))
                            }
                            Some(p) if used.contains(&p) => causes.push(port_taken(i, p)),
                            Some(p) => {
                                used.insert(p);
                                mine.ports.insert(p);
                            }
                            None => causes.push(StatusCause::invalid_value(
                                &field,
                                &json!(p),
                                "must be between 1 and 65535, inclusive",
                            )),
                        }
                    }
                    None => match self.free_port(&used) {
                        Some(p) => {
                            used.insert(p);
                            mine.ports.insert(p);
                            port["nodePort"] = json!(p);
                        }
                        None => causes.push(StatusCause::invalid_value(
                            &format!("spec.ports[{i}].nodePort"),
                            &json!(0),
                            &format!(
                                "failed to allocate a nodePort: range is full ({})",
                                self.node_ports
                            ),
                        )),
                    },
                }
            }
        }
        if !causes.is_empty() {
            return Err(causes);
        }
        in_flight.ips.extend(mine.ips.iter().copied());
        in_flight.ports.extend(mine.ports.iter().copied());
        Ok(Reservation {
            taken: mine,
            in_flight: self.in_flight.clone(),
        })
    }

    /// A free cluster IP, from a random starting point (as upstream picks at random),
    /// never the first address (the `kubernetes` Service's).
    fn free_ip(&self, taken: &Taken) -> Option<Ipv4Addr> {
        use rand::Rng;
        let size = self.cluster_ips.size();
        let usable = size.checked_sub(3)?; // network, broadcast, the first address
        if usable == 0 {
            return None;
        }
        let start = rand::rng().random_range(0..usable);
        (0..usable)
            .map(|i| self.cluster_ips.nth(2 + (start + i) % usable))
            .find(|ip| !taken.ips.contains(ip))
    }

    fn free_port(&self, taken: &BTreeSet<u16>) -> Option<u16> {
        use rand::Rng;
        let size = u32::from(self.node_ports.last - self.node_ports.first) + 1;
        let start = rand::rng().random_range(0..size);
        (0..size)
            .map(|i| self.node_ports.first + ((start + i) % size) as u16)
            .find(|p| !taken.contains(p))
    }
}

/// Upstream's cause for a requested cluster IP that is taken.
pub fn ip_taken(ip: Ipv4Addr) -> StatusCause {
    invalid_shown(
        "spec.clusterIPs",
        &format!("[]string{{\"{ip}\"}}"),
        &format!("failed to allocate IP {ip}: provided IP is already allocated"),
    )
}

/// Upstream's cause for a requested node port (of `spec.ports[index]`) that is taken.
pub fn port_taken(index: usize, port: u16) -> StatusCause {
    StatusCause::invalid_value(
        &format!("spec.ports[{index}].nodePort"),
        &json!(port),
        "provided port is already allocated",
    )
}

/// The index in `svc`'s ports of the one asking for node port `port`.
pub fn port_index(svc: &Value, port: u16) -> usize {
    svc["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .position(|p| p["nodePort"].as_u64() == Some(u64::from(port)))
        .unwrap_or(0)
}

/// The Service an address is claimed for (an `IPAddress`'s `spec.parentRef`, a node
/// port claim's value).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Parent {
    pub namespace: String,
    pub name: String,
}

impl Parent {
    /// The Service `svc` (its namespace and name).
    pub fn of(svc: &Value) -> Parent {
        let meta = &svc["metadata"];
        Parent {
            namespace: meta["namespace"].as_str().unwrap_or_default().to_string(),
            name: meta["name"].as_str().unwrap_or_default().to_string(),
        }
    }

    /// The Service an `IPAddress` names as its parent; `None` for another kind's.
    pub fn of_ip_address(obj: &Value) -> Option<Parent> {
        let r = &obj["spec"]["parentRef"];
        if !r["group"].as_str().unwrap_or_default().is_empty() || r["resource"] != "services" {
            return None;
        }
        Some(Parent {
            namespace: r["namespace"].as_str().unwrap_or_default().to_string(),
            name: r["name"].as_str()?.to_string(),
        })
    }

    /// The Service a node port claim's value names.
    pub fn of_port_claim(value: &[u8]) -> Option<Parent> {
        let v: Value = serde_json::from_slice(value).ok()?;
        Some(Parent {
            namespace: v["namespace"].as_str()?.to_string(),
            name: v["name"].as_str()?.to_string(),
        })
    }

    /// A node port claim's value.
    pub fn port_claim(&self) -> Vec<u8> {
        json!({ "namespace": self.namespace, "name": self.name })
            .to_string()
            .into_bytes()
    }

    /// The `IPAddress` object that claims `ip` for this Service, as upstream's
    /// allocator writes it.
    pub fn ip_address(&self, ip: Ipv4Addr) -> Value {
        json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IPAddress",
            "metadata": {
                "name": ip.to_string(),
                "labels": { IP_FAMILY_LABEL: "IPv4", MANAGED_BY_LABEL: IP_ALLOCATOR },
            },
            "spec": { "parentRef": {
                "resource": "services", "namespace": self.namespace, "name": self.name,
            } },
        })
    }
}

/// Upstream's labels on the `IPAddress` objects its allocator writes.
pub const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
pub const IP_FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";
/// The allocator's name in [`MANAGED_BY_LABEL`] (upstream's).
pub const IP_ALLOCATOR: &str = "ipallocator.k8s.io";

/// One claim as the repair pass reads it: the address, the Service it names (if any),
/// and whether the allocator wrote it (only those are removed).
#[derive(Debug, Clone)]
pub struct Claimed<A> {
    pub address: A,
    pub parent: Option<Parent>,
    pub managed: bool,
}

/// What a repair pass does: claims to create for addresses Services hold without one,
/// and claims of the allocator's that no Service holds (removed once seen twice).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RepairPlan {
    pub missing_ips: Vec<(Ipv4Addr, Parent)>,
    pub missing_ports: Vec<(u16, Parent)>,
    pub orphan_ips: Vec<Ipv4Addr>,
    pub orphan_ports: Vec<u16>,
}

impl ServiceAllocator {
    /// Compares what the stored Services hold with the claims in storage (upstream's
    /// repair controllers). Addresses outside the ranges get no claim (the ranges may
    /// have changed since); a claim naming a Service that does not hold its address
    /// (gone, or holding another) is an orphan.
    pub fn repair_plan(
        &self,
        services: &[Value],
        ips: &[Claimed<Ipv4Addr>],
        ports: &[Claimed<u16>],
    ) -> RepairPlan {
        let mut ip_holder = BTreeMap::new();
        let mut port_holder = BTreeMap::new();
        for svc in services {
            let parent = Parent::of(svc);
            let (held_ips, held_ports) = held(svc);
            for ip in held_ips
                .into_iter()
                .filter(|ip| self.cluster_ips.allocatable(*ip))
            {
                ip_holder.entry(ip).or_insert_with(|| parent.clone());
            }
            for port in held_ports
                .into_iter()
                .filter(|p| self.node_ports.contains(*p))
            {
                port_holder.entry(port).or_insert_with(|| parent.clone());
            }
        }
        let claimed_ips: BTreeSet<Ipv4Addr> = ips.iter().map(|c| c.address).collect();
        let claimed_ports: BTreeSet<u16> = ports.iter().map(|c| c.address).collect();
        RepairPlan {
            missing_ips: ip_holder
                .iter()
                .filter(|(ip, _)| !claimed_ips.contains(ip))
                .map(|(ip, p)| (*ip, p.clone()))
                .collect(),
            missing_ports: port_holder
                .iter()
                .filter(|(port, _)| !claimed_ports.contains(port))
                .map(|(port, p)| (*port, p.clone()))
                .collect(),
            orphan_ips: ips
                .iter()
                .filter(|c| c.managed && ip_holder.get(&c.address) != c.parent.as_ref())
                .map(|c| c.address)
                .collect(),
            orphan_ports: ports
                .iter()
                .filter(|c| c.managed && port_holder.get(&c.address) != c.parent.as_ref())
                .map(|c| c.address)
                .collect(),
        }
    }
}

/// `FieldValueInvalid` with the value shown as given (Go's `%#v` of a list:
/// `[]string{"10.0.0.5"}`), as upstream's allocator reports it.
fn invalid_shown(field: &str, shown: &str, detail: &str) -> StatusCause {
    StatusCause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {shown}: {detail}"),
        field: field.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_as_upstream_flags() {
        let r = IpRange::parse("10.0.0.0/24").unwrap();
        assert_eq!(r.first(), Ipv4Addr::new(10, 0, 0, 1));
        assert!(r.allocatable(Ipv4Addr::new(10, 0, 0, 254)));
        assert!(!r.allocatable(Ipv4Addr::new(10, 0, 0, 255)));
        assert!(!r.allocatable(Ipv4Addr::new(10, 0, 0, 0)));
        assert!(!r.allocatable(Ipv4Addr::new(10, 0, 1, 1)));
        assert!(IpRange::parse("10.0.0.1/24").is_err());
        assert!(IpRange::parse("fd00::/108").is_err());
        assert!(IpRange::parse("10.0.0.0/8").is_err());
        assert_eq!(
            PortRange::parse("30000-32767").unwrap(),
            PortRange {
                first: 30000,
                last: 32767
            }
        );
        assert_eq!(PortRange::parse("30000+10").unwrap().last, 30010);
        assert!(PortRange::parse("32767-30000").is_err());
    }

    #[test]
    fn assigns_distinct_addresses_and_refuses_taken_ones() {
        let a = ServiceAllocator::new(
            IpRange::parse("10.0.0.0/29").unwrap(),
            PortRange::parse("30000-30001").unwrap(),
        );
        let mut held = Vec::new();
        let mut seen = BTreeSet::new();
        // /29: 8 addresses, minus network, broadcast and the first: 5 to hand out.
        for _ in 0..5 {
            let mut svc = json!({"spec": {"type": "ClusterIP"}});
            held.push(a.assign(&mut svc, None, Taken::default()).unwrap());
            assert!(seen.insert(svc["spec"]["clusterIP"].as_str().unwrap().to_string()));
        }
        let mut svc = json!({"spec": {}});
        assert!(a.assign(&mut svc, None, Taken::default()).is_err());
        held.clear();
        let mut taken = Taken::default();
        taken.add_service(&json!({"spec": {"clusterIP": "10.0.0.3"}}));
        let mut svc = json!({"spec": {"clusterIP": "10.0.0.3"}});
        let causes = a.assign(&mut svc, None, taken.clone()).err().unwrap();
        assert_eq!(causes.len(), 1);
        // Its own address is no conflict on update.
        let old = json!({"spec": {"clusterIP": "10.0.0.3", "clusterIPs": ["10.0.0.3"]}});
        assert!(a.assign(&mut svc, Some(&old), taken).is_ok());
        let mut np = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 81}]}});
        let _r = a.assign(&mut np, None, Taken::default()).unwrap();
        let ports: BTreeSet<u64> = (0..2)
            .map(|i| np["spec"]["ports"][i]["nodePort"].as_u64().unwrap())
            .collect();
        assert_eq!(ports, BTreeSet::from([30000, 30001]));
    }

    #[test]
    fn repair_finds_missing_and_orphan_claims() {
        let a = ServiceAllocator::default();
        let svc = |ns: &str, name: &str, ip: &str, node_port: Option<u16>| {
            json!({"metadata": {"namespace": ns, "name": name}, "spec": {
                "clusterIP": ip, "clusterIPs": [ip],
                "ports": [{"port": 80, "nodePort": node_port}]}})
        };
        let parent = |ns: &str, name: &str| Parent {
            namespace: ns.into(),
            name: name.into(),
        };
        let services = [
            svc("default", "kubernetes", "10.0.0.1", None),
            svc("a", "web", "10.0.0.7", Some(30080)),
            // Outside the range (the flag changed): no claim is made for it.
            svc("a", "old", "10.9.0.7", None),
        ];
        let ip = |addr: [u8; 4], parent: Option<Parent>, managed: bool| Claimed {
            address: Ipv4Addr::from(addr),
            parent,
            managed,
        };
        let ips = [
            ip([10, 0, 0, 1], Some(parent("default", "kubernetes")), true),
            // The Service is gone.
            ip([10, 0, 0, 9], Some(parent("a", "gone")), true),
            // Another Service holds the address now: this claim is wrong.
            ip([10, 0, 0, 7], Some(parent("a", "other")), true),
            // Not the allocator's: left alone.
            ip([10, 0, 0, 20], None, false),
        ];
        let ports = [Claimed {
            address: 30081,
            parent: Some(parent("a", "web")),
            managed: true,
        }];
        let plan = a.repair_plan(&services, &ips, &ports);
        assert_eq!(
            plan,
            RepairPlan {
                missing_ips: vec![],
                missing_ports: vec![(30080, parent("a", "web"))],
                orphan_ips: vec![Ipv4Addr::new(10, 0, 0, 9), Ipv4Addr::new(10, 0, 0, 7)],
                orphan_ports: vec![30081],
            }
        );
        // Once the wrong claim is gone, the next pass recreates it for its holder.
        let plan = a.repair_plan(&services, &ips[..1], &[]);
        assert_eq!(
            plan.missing_ips,
            vec![(Ipv4Addr::new(10, 0, 0, 7), parent("a", "web"))]
        );
    }

    #[test]
    fn claims_name_their_service_as_upstream_writes_them() {
        let p = Parent {
            namespace: "a".into(),
            name: "web".into(),
        };
        let obj = p.ip_address(Ipv4Addr::new(10, 0, 0, 7));
        assert_eq!(obj["metadata"]["name"], "10.0.0.7");
        assert_eq!(obj["metadata"]["labels"][MANAGED_BY_LABEL], IP_ALLOCATOR);
        assert_eq!(Parent::of_ip_address(&obj), Some(p.clone()));
        assert_eq!(Parent::of_port_claim(&p.port_claim()), Some(p));
        let gateway = json!({"spec": {"parentRef": {"group": "gateway.networking.k8s.io", "resource": "gateways", "name": "g"}}});
        assert_eq!(Parent::of_ip_address(&gateway), None);
    }
}
