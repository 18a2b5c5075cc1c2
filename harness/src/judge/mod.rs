//! Judging a case, above running it: the [`Rule`](crate::Rule) catalogue,
//! the [`Oracle`](crate::Oracle) that checks each rule on an
//! [`Outcome`](crate::Outcome), and the [`Judgement`](crate::Judgement) it
//! returns.

pub(crate) mod judgement;
pub(crate) mod oracle;
pub(crate) mod rule;
