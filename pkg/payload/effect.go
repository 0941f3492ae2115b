package payload

// Effect says how a task's failure weighs on the update, as the CVO's
// UpdateEffect.
type Effect string

const (
	// EffectFail fails the task.
	EffectFail Effect = "Fail"
	// EffectNone is a wait: the task did not finish, but nothing is wrong yet.
	EffectNone Effect = "None"
	// EffectFailAfterInterval fails only once the condition has lasted
	// past a grace period; until then it is a wait.
	EffectFailAfterInterval Effect = "FailAfterInterval"
	// EffectReport is reported, and keeps the pass from completing, but
	// holds no later task back.
	EffectReport Effect = "Report"
)
