// The cluster's Temporal server (scripts/cluster.sh): go.temporal.io/server as released,
// started the way its own cmd/server starts it, with one addition — every caller's
// certificate names its role (DESIGN §18). One CA signs every certificate of the cluster,
// so the subject's common name, not the signature, says who may do what:
//
//	sandboxplane-operator, sandboxplane-internode  administer the cluster (the server's own
//	                                                system worker presents the internode one)
//	sandboxplane-worker                            run the plane: poll, complete, start,
//	                                                signal, update, query, schedules, builds
//	sandboxplane-gateway                           what the gateway does: start, signal,
//	                                                update, query, read; never poll a task
//	                                                queue or promote a build
//	sandboxplane-ui                                what a person does in the UI (read,
//	                                                signal approvals, terminate)
//
// None but the operator's may end or rewrite a workflow in bulk or by force (terminate,
// reset, delete, batch operations) or change a namespace or its search attributes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/server/common/api"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/temporal"
)

// The roles by certificate common name; a name not here gets no claims (and so nothing but health checks).
var roles = map[string]authorization.Role{
	"sandboxplane-operator":  authorization.RoleAdmin,
	"sandboxplane-internode": authorization.RoleAdmin,
	"sandboxplane-worker":    authorization.RoleWriter,
	"sandboxplane-gateway":   authorization.RoleWriter,
	"sandboxplane-ui":        authorization.RoleWriter,
}

// Writes an operator keeps for themselves, whatever a writer may otherwise do.
var operatorOnly = set("TerminateWorkflowExecution", "ResetWorkflowExecution", "DeleteWorkflowExecution", "StartBatchOperation", "StopBatchOperation")

// Beyond those, what the gateway never does: act as a worker, or choose which build runs.
var notForGateway = set(
	"PollWorkflowTaskQueue", "PollActivityTaskQueue", "PollNexusTaskQueue",
	"RespondWorkflowTaskCompleted", "RespondWorkflowTaskFailed", "RespondQueryTaskCompleted",
	"RespondActivityTaskCompleted", "RespondActivityTaskFailed", "RespondActivityTaskCanceled",
	"RespondActivityTaskCompletedById", "RespondActivityTaskFailedById", "RespondActivityTaskCanceledById",
	"RecordActivityTaskHeartbeat", "RecordActivityTaskHeartbeatById", "RespondNexusTaskCompleted", "RespondNexusTaskFailed",
	"SetWorkerDeploymentCurrentVersion", "SetWorkerDeploymentRampingVersion", "DeleteWorkerDeploymentVersion",
	"DeleteWorkerDeployment", "UpdateWorkerDeploymentVersionMetadata", "CreateSchedule", "UpdateSchedule", "DeleteSchedule", "PatchSchedule",
)

func set(names ...string) map[string]bool {
	out := make(map[string]bool, len(names))
	for _, name := range names {
		out[name] = true
	}
	return out
}

// subjectRoles maps a client certificate's subject to its claims.
type subjectRoles struct{}

func (subjectRoles) GetClaims(info *authorization.AuthInfo) (*authorization.Claims, error) {
	if info == nil || info.TLSSubject == nil {
		return nil, nil
	}
	role, known := roles[info.TLSSubject.CommonName]
	if !known {
		return nil, nil
	}
	return &authorization.Claims{Subject: info.TLSSubject.CommonName, System: role}, nil
}

// roleAuthorizer is Temporal's default authorizer (a role against each API's access level)
// with the exceptions above.
type roleAuthorizer struct{ base authorization.Authorizer }

func (a roleAuthorizer) Authorize(ctx context.Context, claims *authorization.Claims, target *authorization.CallTarget) (authorization.Result, error) {
	if claims != nil && claims.System < authorization.RoleAdmin {
		method := api.MethodName(target.APIName)
		if operatorOnly[method] || (claims.Subject == "sandboxplane-gateway" && notForGateway[method]) {
			return authorization.Result{Decision: authorization.DecisionDeny, Reason: fmt.Sprintf("%s is not for %s", method, claims.Subject)}, nil
		}
	}
	return a.base.Authorize(ctx, claims, target)
}

// services collects repeated --service flags.
type services []string

func (s *services) String() string     { return strings.Join(*s, ",") }
func (s *services) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	global := flag.NewFlagSet("temporal-server", flag.ExitOnError)
	root := global.String("root", ".", "root directory of the configuration")
	configDir := global.String("config", "config", "configuration directory under --root")
	env := global.String("env", "development", "configuration environment")
	zone := global.String("zone", "", "availability zone")
	global.Bool("allow-no-auth", false, "accepted for cmd/server's command line; this server always authorizes")
	_ = global.Parse(os.Args[1:])
	if global.Arg(0) != "start" {
		fail("usage: temporal-server [--root DIR] [--config DIR] [--env NAME] start [--service NAME]...")
	}
	start := flag.NewFlagSet("start", flag.ExitOnError)
	var chosen services
	start.Var(&chosen, "service", "a service to start (repeat the flag); default all")
	_ = start.Parse(global.Args()[1:])
	if len(chosen) == 0 {
		chosen = temporal.DefaultServices
	}

	cfg, err := config.LoadConfig(*env, filepath.Join(*root, *configDir), *zone)
	if err != nil {
		fail(fmt.Sprintf("unable to load configuration: %v", err))
	}
	logger := log.NewZapLogger(log.BuildZapLogger(cfg.Log))
	dynamic := dynamicconfig.Client(dynamicconfig.NewNoopClient())
	if cfg.DynamicConfigClient != nil {
		if dynamic, err = dynamicconfig.NewFileBasedClient(cfg.DynamicConfigClient, logger, temporal.InterruptCh()); err != nil {
			fail(fmt.Sprintf("unable to read dynamic configuration: %v", err))
		}
	}
	server, err := temporal.NewServer(
		temporal.ForServices(chosen),
		temporal.WithConfig(cfg),
		temporal.WithDynamicConfigClient(dynamic),
		temporal.WithLogger(logger),
		temporal.InterruptOn(temporal.InterruptCh()),
		temporal.WithAuthorizer(roleAuthorizer{base: authorization.NewDefaultAuthorizer()}),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return subjectRoles{} }),
	)
	if err != nil {
		fail(fmt.Sprintf("unable to create the server: %v", err))
	}
	if err := server.Start(); err != nil {
		fail(fmt.Sprintf("unable to start the server: %v", err))
	}
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, message)
	os.Exit(1)
}
