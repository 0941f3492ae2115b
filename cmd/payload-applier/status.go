package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

type statusOptions struct {
	cluster clusterFlags
	output  string
	name    string
}

func newStatusCommand() *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the cluster version, conditions, history and deletes in progress",
		Long: `Status shows what 'oc adm upgrade' shows: the current and desired versions
and release image, the ClusterVersion conditions, progress and history (with
whether each release's signature was verified), plus the deletes the ledger
tracks, with their finalizers and age.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.cluster.add(cmd)
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&o.name, "name", "version", "name of the ClusterVersion")
	return cmd
}

// statusJSON is the machine-readable `status -o json`.
type statusJSON struct {
	Current string                        `json:"current"`
	Desired configv1.Release              `json:"desired"`
	Status  configv1.ClusterVersionStatus `json:"status"`
	Deletes []deletion.Record             `json:"deletes"`
	// ImplicitlyEnabledCapabilities are enabled though the spec does not
	// ask for them.
	ImplicitlyEnabledCapabilities []string `json:"implicitlyEnabledCapabilities"`
	// AdminAcks are the admin gates awaiting an ack.
	AdminAcks planAdminAcks `json:"adminAcks"`
}

func (o *statusOptions) run(cmd *cobra.Command) error {
	if err := checkOutput(o.output, "text", "json"); err != nil {
		return err
	}
	cfg, err := o.cluster.restConfig()
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	cc, err := configclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	cv, err := cc.ConfigV1().ClusterVersions().Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		return withExitCode(exitFailed, fmt.Errorf("get ClusterVersion %s: %w", o.name, err))
	}
	ledger := deletion.NewConfigMapStore(kube, o.cluster.namespace, apply.DefaultSelf().Ledger)
	records, err := ledger.Load(ctx)
	var unreadable *deletion.UnreadableError
	switch {
	case errors.As(err, &unreadable):
		// The conditions still tell the story; Failing says how to repair.
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: the delete ledger is unreadable, so no delete is listed: %v\n", err)
	case err != nil:
		return withExitCode(exitFailed, err)
	}
	doc := statusJSON{Current: precondition.LastCompletedVersion(cv.Status.History), Desired: cv.Status.Desired, Status: cv.Status, Deletes: []deletion.Record{}}
	doc.ImplicitlyEnabledCapabilities = statusCapabilities(cv)
	doc.AdminAcks = liveAdminAcks(ctx, kube, cv, "")
	for _, r := range records {
		if !r.Done() || r.ReappearedAt != nil {
			doc.Deletes = append(doc.Deletes, r)
		}
	}
	if o.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	writeStatusText(cmd.OutOrStdout(), doc, time.Now())
	return nil
}

func writeStatusText(w io.Writer, doc statusJSON, now time.Time) {
	cur := doc.Current
	if cur == "" {
		cur = "<none: not installed yet>"
	}
	fmt.Fprintf(w, "Cluster version: %s\n", cur)
	if doc.Desired.Version != "" && doc.Desired.Version != doc.Current {
		fmt.Fprintf(w, "Desired version: %s\n", doc.Desired.Version)
	}
	if doc.Desired.Image != "" {
		fmt.Fprintf(w, "Desired image: %s\n", doc.Desired.Image)
	}
	for _, c := range doc.Status.Conditions {
		if c.Type == clusterversion.ConditionReleaseDeprecated && c.Status == configv1.ConditionTrue {
			fmt.Fprintf(w, "Deprecated: %s\n", oneLine(c.Message))
		}
	}
	if updates := doc.Status.AvailableUpdates; len(updates) > 0 {
		versions := make([]string, len(updates))
		for i, u := range updates {
			versions[i] = u.Version
		}
		fmt.Fprintf(w, "Available updates: %s\n", strings.Join(versions, ", "))
	}
	writeConditionalUpdates(w, doc.Status.ConditionalUpdates)
	writeCapabilitiesText(w, doc)
	writeAdminAcks(w, doc.AdminAcks)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONDITION\tSTATUS\tREASON\tMESSAGE")
	conds := append([]configv1.ClusterOperatorStatusCondition(nil), doc.Status.Conditions...)
	sort.Slice(conds, func(i, j int) bool { return conds[i].Type < conds[j].Type })
	for _, c := range conds {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, oneLine(c.Message))
	}
	_ = tw.Flush()
	if len(doc.Deletes) > 0 {
		fmt.Fprintln(w, "\nDeletes:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "OBJECT\tSTATE\tAGE\tFINALIZERS\tMANIFEST")
		for _, d := range doc.Deletes {
			age := "-"
			if d.RequestedAt != nil {
				age = now.Sub(d.RequestedAt.Time).Round(time.Second).String()
			}
			state := string(d.State)
			if d.ReappearedAt != nil {
				state += ", reappeared"
			}
			switch {
			case d.State == deletion.Refused:
				state += ": " + oneLine(d.LastError)
			case d.LastError != "":
				state += ", failed: " + oneLine(d.LastError)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.ID, state, age, strings.Join(d.Finalizers, ","), d.File)
		}
		_ = tw.Flush()
	}
	if len(doc.Status.History) > 0 {
		fmt.Fprintln(w, "\nHistory:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tSTATE\tSTARTED\tCOMPLETED\tVERIFIED\tACCEPTED RISKS")
		for _, h := range doc.Status.History {
			done := "-"
			if h.CompletionTime != nil {
				done = h.CompletionTime.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\n", h.Version, h.State, h.StartedTime.UTC().Format(time.RFC3339), done, h.Verified, oneLine(h.AcceptedRisks))
		}
		_ = tw.Flush()
	}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
