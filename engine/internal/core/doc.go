// Package core is the transfer core that every protocol of the engine
// shares: Ferry's wire session (engine/receive.go, send.go), LocalSend's
// (engine/localsend.go, localsend_send.go) and, for what they need of it,
// browser links. It holds
//
//   - the Inbox, one incoming offer: the limits on what a peer may offer,
//     names refused one by one, the receiving policy, trust, the space
//     check, the prompt and its expiry, the destination folder, each file's
//     outcome and the result;
//   - the Outbox, one send: attempts with back-off, pause and resume,
//     totals across attempts and Retry, the result; each protocol's
//     Attempt does one connection's worth of work;
//   - the Admission, what incoming sessions may hold before anyone decided
//     to receive from them, shared fairly by address and device, and the
//     places of prompts;
//   - EndOf, how a transfer ended in the user's words, and the transfer's
//     model (State, Decision, Result, ...), which package engine names
//     with aliases.
//
// The core speaks the neutral codes of the one table (package errcode),
// names peers by peer.ID and reaches the engine only through the small
// interfaces Host and OutboxHost (events, state, registration, the
// clock); it imports no protocol package and protocol packages import no
// other protocol (engine/deps_test.go).
package core
