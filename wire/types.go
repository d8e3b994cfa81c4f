package wire

import (
	"reflect"

	"warrant/internal/closed"
)

// MsgType names the body of an envelope.
type MsgType uint8

// The message types, grouped by the channel that carries them.
const (
	// Agent → broker (agent.sock).
	TypeSubmit MsgType = iota + 1
	TypeQuery
	TypeWait
	TypeCancel
	TypeGoalCreate
	TypeGoalRevise
	TypeApprovalWait
	TypeFollow
	TypeGoalShow
	TypeGoalVerify
	TypeGoalList

	// Operator → broker (operator.sock).
	TypeApprove
	TypeDeny
	TypeRevoke
	TypeList
	TypeResolve
	TypeGoalSetState
	TypeGoalAttest
	TypeContractEnable
	TypeContractOffer

	// Broker → agent or operator.
	TypeAccepted
	TypeApprovalRequired
	TypeStatus
	TypeWaitTimeout
	TypeCancelReply
	TypeLeaseGranted
	TypeListing
	TypeGoalReply
	TypeGoalListing
	TypeOK
	TypeApprovalState
	TypeOutputChunk
	TypeContractOffers
	TypeError

	// Broker → launcher.
	TypeSpawnRequest
	TypeProceed
	TypePrepare

	// Launcher → broker.
	TypeReady
	TypeRefused
	TypeExecFailed
)

var msgTypeNames = []string{"",
	"submit", "query", "wait", "cancel", "goal_create", "goal_revise", "approval_wait", "follow",
	"goal_show", "goal_verify", "goal_list",
	"approve", "deny", "revoke", "list", "resolve", "goal_set_state", "goal_attest", "contract_enable", "contract_offer",
	"accepted", "approval_required", "status", "wait_timeout", "cancel_reply",
	"lease_granted", "listing", "goal", "goal_listing", "ok", "approval_state", "output_chunk", "contract_offers", "error",
	"spawn_request", "proceed", "prepare",
	"ready", "refused", "exec_failed",
}

func (t MsgType) names() []string                  { return msgTypeNames }
func (t MsgType) String() string                   { return closed.String(msgTypeNames, t) }
func (t MsgType) MarshalText() ([]byte, error)     { return closed.Marshal(msgTypeNames, t) }
func (t *MsgType) UnmarshalText(text []byte) error { return closed.Unmarshal(msgTypeNames, text, t) }

// messageTypes maps each message type to its body's Go type.
var messageTypes = map[MsgType]reflect.Type{
	TypeSubmit:           reflect.TypeFor[Submit](),
	TypeQuery:            reflect.TypeFor[Query](),
	TypeWait:             reflect.TypeFor[Wait](),
	TypeCancel:           reflect.TypeFor[Cancel](),
	TypeGoalCreate:       reflect.TypeFor[GoalCreate](),
	TypeGoalRevise:       reflect.TypeFor[GoalRevise](),
	TypeApprovalWait:     reflect.TypeFor[ApprovalWait](),
	TypeFollow:           reflect.TypeFor[Follow](),
	TypeGoalShow:         reflect.TypeFor[GoalShow](),
	TypeGoalVerify:       reflect.TypeFor[GoalVerify](),
	TypeGoalList:         reflect.TypeFor[GoalList](),
	TypeApprove:          reflect.TypeFor[Approve](),
	TypeDeny:             reflect.TypeFor[Deny](),
	TypeRevoke:           reflect.TypeFor[Revoke](),
	TypeList:             reflect.TypeFor[List](),
	TypeResolve:          reflect.TypeFor[Resolve](),
	TypeGoalSetState:     reflect.TypeFor[GoalSetState](),
	TypeGoalAttest:       reflect.TypeFor[GoalAttest](),
	TypeContractEnable:   reflect.TypeFor[ContractEnable](),
	TypeContractOffer:    reflect.TypeFor[ContractOffer](),
	TypeAccepted:         reflect.TypeFor[Accepted](),
	TypeApprovalRequired: reflect.TypeFor[ApprovalRequired](),
	TypeStatus:           reflect.TypeFor[Status](),
	TypeWaitTimeout:      reflect.TypeFor[WaitTimeout](),
	TypeCancelReply:      reflect.TypeFor[CancelReply](),
	TypeLeaseGranted:     reflect.TypeFor[LeaseGranted](),
	TypeListing:          reflect.TypeFor[Listing](),
	TypeGoalReply:        reflect.TypeFor[GoalReply](),
	TypeGoalListing:      reflect.TypeFor[GoalListing](),
	TypeOK:               reflect.TypeFor[OK](),
	TypeApprovalState:    reflect.TypeFor[ApprovalState](),
	TypeOutputChunk:      reflect.TypeFor[OutputChunk](),
	TypeContractOffers:   reflect.TypeFor[ContractOffers](),
	TypeError:            reflect.TypeFor[Error](),
	TypeSpawnRequest:     reflect.TypeFor[SpawnRequest](),
	TypeProceed:          reflect.TypeFor[Proceed](),
	TypePrepare:          reflect.TypeFor[Prepare](),
	TypeReady:            reflect.TypeFor[Ready](),
	TypeRefused:          reflect.TypeFor[Refused](),
	TypeExecFailed:       reflect.TypeFor[ExecFailed](),
}

// Channel is one direction of one connection; each admits a closed set of
// message types.
type Channel uint8

// The channels.
const (
	AgentChannel    Channel = iota + 1 // agent → broker on agent.sock
	OperatorChannel                    // operator → broker on operator.sock
	ReplyChannel                       // broker → agent or operator
	SpawnChannel                       // broker → launcher
	LauncherChannel                    // launcher → broker
)

var channelNames = []string{"", "agent", "operator", "reply", "spawn", "launcher"}

func (c Channel) String() string { return closed.String(channelNames, c) }

func (c Channel) allows(t MsgType) bool {
	switch c {
	case AgentChannel:
		return t >= TypeSubmit && t <= TypeGoalList
	case OperatorChannel:
		return t >= TypeApprove && t <= TypeContractOffer
	case ReplyChannel:
		return t >= TypeAccepted && t <= TypeError
	case SpawnChannel:
		return t >= TypeSpawnRequest && t <= TypePrepare
	case LauncherChannel:
		return t >= TypeReady && t <= TypeExecFailed
	}
	return false
}
