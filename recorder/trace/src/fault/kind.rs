//! [`FaultKind`]: the name of an injected fault, as `detail.fault` of a `fault` row gives it.

macro_rules! fault_kinds {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal ),+ $(,)?) => {
        /// The fault a `fault` row reports (`detail.fault`): one of the contract's fault kinds, or
        /// [`FaultKind::Other`] for a name it does not define.
        ///
        /// Written as the plain name. Reading never fails: an unknown name is kept as it is and
        /// written back unchanged, and a `fault` row without a (string) `fault` reads as the empty
        /// name, `Other("")` (the [`Default`]). Values compare, hash and order as their names.
        #[derive(Debug, Clone)]
        pub enum FaultKind {
            $( $(#[$doc])* $variant, )+
            /// A name this contract does not define, kept as it is. [`FaultKind::from`] never
            /// makes one for a known name.
            Other(String),
        }

        impl FaultKind {
            /// Every fault kind the contract defines, in its order.
            pub const ALL: &'static [FaultKind] = &[$(FaultKind::$variant),+];

            /// The name as written in `detail.fault`.
            pub fn as_str(&self) -> &str {
                match self {
                    $(FaultKind::$variant => $name,)+
                    FaultKind::Other(name) => name,
                }
            }

            /// The fault of this name: a known kind, else `Other` holding the name.
            fn from_name(name: String) -> Self {
                match name.as_str() {
                    $($name => FaultKind::$variant,)+
                    _ => FaultKind::Other(name),
                }
            }
        }
    };
}

fault_kinds! {
    /// A process of a user's system stopped (SIGSTOP) for a while (`detail.duration_ms`).
    Pause = "pause",
    /// A service of a user's system restarted.
    ServiceRestart = "service-restart",
    /// A service of a user's system stopped for a while.
    ServicePause = "service-pause",
    /// The broker (a member of its cluster) restarted.
    BrokerRestart = "broker-restart",
    /// The store (a member of its cluster) restarted.
    StoreRestart = "store-restart",
    /// A wire fault: replies on a connection are dropped.
    DropReplies = "drop-replies",
    /// A wire fault: requests on a connection are dropped.
    DropRequests = "drop-requests",
    /// A wire fault: a connection is cut.
    Cut = "cut",
    /// A wire fault: a service is cut off from the others.
    Partition = "partition",
    /// A wire fault: the reply to a store commit is lost (the commit may have gone through).
    LoseCommitReply = "lose-commit-reply",
    /// A wire fault: the broker's publish ACK is lost (the broker may hold the copy).
    LosePuback = "lose-puback",
    /// A wire fault: the response to a Kafka produce is lost (the broker may hold the records).
    LoseProduceAck = "lose-produce-ack",
}

super::named!(FaultKind);

impl FaultKind {
    /// Whether the contract defines this fault kind (it is not [`FaultKind::Other`]).
    pub fn is_known(&self) -> bool {
        !matches!(self, FaultKind::Other(_))
    }

    /// The name, as an owned string (no copy for [`FaultKind::Other`]).
    pub fn into_string(self) -> String {
        match self {
            FaultKind::Other(name) => name,
            known => known.as_str().to_string(),
        }
    }
}

impl Default for FaultKind {
    /// The empty name, `Other("")`: what a `fault` row without a `fault` name reads as.
    fn default() -> Self {
        FaultKind::Other(String::new())
    }
}
