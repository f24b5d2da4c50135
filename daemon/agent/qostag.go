package agent

import (
	"strconv"

	"github.com/strata-hpc/strata/qos"
)

// qosTag is the QoS tag of a tier's traffic of kind class (stage-in or
// drain) toward the global namespace: the job, and the class the spec's
// qos= names, else class itself (docs/storage-tier.md). The spec's class
// was checked when it was parsed (jobtier.JobClasses); one this binary
// does not know keeps the kind's own.
func (t *tier) qosTag(class qos.Class) qos.Tag {
	if c, err := qos.ParseClass(t.spec.QoS); t.spec.QoS != "" && err == nil {
		class = c
	}
	return qos.Tag{Job: strconv.FormatUint(uint64(t.st.Job), 10), Class: class}
}
