package clusterversion

import "testing"

// TestCVORecommendedReason: pkg/cvo/availableupdates_test.go,
// Test_newRecommendedReason, through combinedReason.
func TestCVORecommendedReason(t *testing.T) {
	const (
		notExposed = "NotExposedToRisks"
		accepted   = "AllExposedRisksAccepted"
		failed     = "EvaluationFailed"
		multiple   = "MultipleReasons"
		exposed    = "ExposedToRisks"
	)
	names := map[string]string{notExposed: "recommendedReasonRisksNotExposed", accepted: "recommendedReasonAllExposedRisksAccepted",
		failed: "recommendedReasonEvaluationFailed", multiple: "recommendedReasonMultiple", exposed: "recommendedReasonExposed"}
	tests := []struct{ now, want, expected string }{
		{notExposed, accepted, accepted},
		{notExposed, failed, failed},
		{notExposed, multiple, multiple},
		{notExposed, exposed, exposed},
		{accepted, notExposed, accepted},
		{accepted, failed, failed},
		{accepted, multiple, multiple},
		{accepted, exposed, exposed},
		{failed, notExposed, failed},
		{failed, accepted, failed},
		{failed, multiple, multiple},
		{failed, exposed, exposed},
		{multiple, notExposed, multiple},
		{multiple, accepted, multiple},
		{multiple, failed, multiple},
		{multiple, exposed, multiple},
		{exposed, notExposed, exposed},
		{exposed, accepted, exposed},
		{exposed, failed, exposed},
		{exposed, multiple, multiple},
	}
	for _, tt := range tests {
		t.Run(names[tt.now]+" to "+names[tt.want], func(t *testing.T) {
			if got := combinedReason(tt.now, tt.want); got != tt.expected {
				t.Errorf("combinedReason(%s, %s) = %s, want %s", tt.now, tt.want, got, tt.expected)
			}
		})
	}
}
