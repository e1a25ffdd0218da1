//! A batch's status as the Batch API reports it. The eight documented values are variants; any
//! other string a server sends is kept as `Unknown`, so that it is reported and waited on for a
//! bounded time instead of being mistaken for one of them.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BatchStatus {
    Validating,
    Failed,
    InProgress,
    Finalizing,
    Completed,
    Expired,
    Cancelling,
    Cancelled,
    /// A status the API does not document, as the server spelled it.
    Unknown(String),
}

impl BatchStatus {
    /// The statuses the Batch API documents, in its order.
    pub const DOCUMENTED: [BatchStatus; 8] = [
        BatchStatus::Validating,
        BatchStatus::Failed,
        BatchStatus::InProgress,
        BatchStatus::Finalizing,
        BatchStatus::Completed,
        BatchStatus::Expired,
        BatchStatus::Cancelling,
        BatchStatus::Cancelled,
    ];

    pub fn parse(text: &str) -> BatchStatus {
        BatchStatus::DOCUMENTED
            .into_iter()
            .find(|status| status.as_str() == text)
            .unwrap_or_else(|| BatchStatus::Unknown(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        match self {
            BatchStatus::Validating => "validating",
            BatchStatus::Failed => "failed",
            BatchStatus::InProgress => "in_progress",
            BatchStatus::Finalizing => "finalizing",
            BatchStatus::Completed => "completed",
            BatchStatus::Expired => "expired",
            BatchStatus::Cancelling => "cancelling",
            BatchStatus::Cancelled => "cancelled",
            BatchStatus::Unknown(text) => text,
        }
    }

    /// The batch will not change any more: its files can be collected.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            BatchStatus::Completed
                | BatchStatus::Failed
                | BatchStatus::Expired
                | BatchStatus::Cancelled
        )
    }

    pub fn is_documented(&self) -> bool {
        !matches!(self, BatchStatus::Unknown(_))
    }
}

impl fmt::Display for BatchStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for BatchStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for BatchStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(BatchStatus::parse(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_status_round_trips_and_others_are_kept_as_written() {
        for status in BatchStatus::DOCUMENTED {
            assert_eq!(BatchStatus::parse(status.as_str()), status);
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(serde_json::from_str::<BatchStatus>(&json).unwrap(), status);
        }
        let odd = BatchStatus::parse("paused_for_review");
        assert_eq!(odd, BatchStatus::Unknown("paused_for_review".into()));
        assert!(!odd.is_documented() && !odd.is_terminal());
        assert_eq!(odd.to_string(), "paused_for_review");
        assert!(BatchStatus::Expired.is_terminal() && !BatchStatus::Finalizing.is_terminal());
    }
}
