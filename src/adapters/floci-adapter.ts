import { clientConfigFor } from '../domain/client-config';
import { SERVICE_CATALOGS } from '../domain/service-catalog';
import { listThroughAwsApis } from './aws-resource-listers';
import { ContainerEmulatorAdapter, type ContainerAdapterOptions } from './container-emulator';
import { flociHealthProbe } from './floci-health';
import { freeLoopbackPort } from './free-port';

export const FLOCI_PORT = 4566;
const REGION = 'us-east-1';
const MIB = 1024 * 1024;

/**
 * The environment Floci starts with. FLOCI_BASE_URL is the published loopback URL,
 * or the URLs Floci writes into answers (SQS QueueUrl, pre-signed URLs) would point
 * at its internal port. Our labels go to FLOCI_DOCKER_EXTRA_LABELS_* so that any side
 * container it made would be traceable to the sandbox; it is never given an engine.
 */
export function flociEnvironment(baseUrl: string | undefined, labels: Readonly<Record<string, string>>): Record<string, string> {
  const environment: Record<string, string> = {
    FLOCI_DEFAULT_REGION: REGION,
    FLOCI_STORAGE_MODE: 'memory',
    ...(baseUrl !== undefined ? { FLOCI_BASE_URL: baseUrl } : {}),
  };
  Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .forEach(([key, value], index) => {
      environment[`FLOCI_DOCKER_EXTRA_LABELS_${index}__KEY`] = key;
      environment[`FLOCI_DOCKER_EXTRA_LABELS_${index}__VALUE`] = value;
    });
  return environment;
}

/**
 * The resource types Floci documents its CloudFormation as provisioning
 * (docs/services/cloudformation.md of floci-io/floci 1.7, "Supported Resource Types"), less
 * what cannot work in a sandbox here: custom resources and nested stacks need Lambda or
 * a template bucket, and AWS::CDK::Metadata is a no-op. Floci accepts any other type
 * with a made-up physical id and CREATE_COMPLETE, so a plan names every other type
 * unsupported. Floci's image cannot run on this machine: the list is its word, untested here.
 * Left out although listed: EC2::SecurityGroupIngress and EC2::SecurityGroupEgress, which
 * Floci 1.7.0 only stubs (CREATE_COMPLETE with a made-up id; DescribeSecurityGroups shows
 * no rule), so a plan must call them unsupported rather than claim a rule was made.
 */
export const FLOCI_CLOUDFORMATION_TYPES: ReadonlySet<string> = new Set(
  [
    'S3::Bucket S3::BucketPolicy SQS::Queue SQS::QueuePolicy SNS::Topic SNS::Subscription DynamoDB::Table DynamoDB::GlobalTable',
    'Lambda::Function Lambda::LayerVersion Lambda::EventSourceMapping Lambda::Version Lambda::Alias',
    'IAM::Role IAM::User IAM::AccessKey IAM::Policy IAM::ManagedPolicy IAM::InstanceProfile SSM::Parameter KMS::Key KMS::Alias',
    'SecretsManager::Secret SecretsManager::SecretTargetAttachment ECR::Repository ECS::Cluster ECS::TaskDefinition ECS::Service EKS::Cluster EKS::Nodegroup',
    'RDS::DBInstance RDS::DBCluster RDS::DBSubnetGroup RDS::DBParameterGroup RDS::DBClusterParameterGroup',
    'EC2::VPC EC2::Subnet EC2::SecurityGroup EC2::InternetGateway EC2::RouteTable',
    'EC2::SubnetRouteTableAssociation EC2::Route EC2::NatGateway EC2::EIP EC2::Instance EC2::LaunchTemplate EC2::VPCGatewayAttachment',
    'EC2::NetworkAcl EC2::NetworkAclEntry EC2::SubnetNetworkAclAssociation EC2::FlowLog',
    'ElasticLoadBalancingV2::LoadBalancer ElasticLoadBalancingV2::TargetGroup ElasticLoadBalancingV2::Listener ElasticLoadBalancingV2::ListenerRule',
    'AutoScaling::LaunchConfiguration AutoScaling::AutoScalingGroup AutoScaling::LifecycleHook Route53::HostedZone Route53::RecordSet',
    'ApiGateway::RestApi ApiGateway::Resource ApiGateway::Authorizer ApiGateway::Method ApiGateway::Deployment ApiGateway::Stage ApiGateway::Account',
    'ApiGatewayV2::Api ApiGatewayV2::Route ApiGatewayV2::Integration ApiGatewayV2::Stage ApiGatewayV2::Deployment StepFunctions::StateMachine',
    'Batch::ComputeEnvironment Batch::JobQueue Batch::JobDefinition Cognito::UserPool Cognito::UserPoolClient',
    'Events::Rule Events::EventBus Events::EventBusPolicy Pipes::Pipe Kinesis::Stream KinesisFirehose::DeliveryStream CloudWatch::Alarm Logs::LogGroup',
  ]
    .join(' ')
    .split(' ')
    .map((type) => `AWS::${type}`),
);

/** Floci in a container through the broker (DESIGN §4). */
export function createFlociAdapter(options: ContainerAdapterOptions): ContainerEmulatorAdapter {
  const catalog = SERVICE_CATALOGS.floci;
  return new ContainerEmulatorAdapter({
    ...options,
    adapter: 'floci',
    catalog,
    containerPort: FLOCI_PORT,
    region: REGION,
    memoryBytes: 1024 * MIB,
    // Not measured yet: its request is its limit, so placement never overcommits a JVM.
    memoryRequestBytes: 1024 * MIB,
    pidsLimit: 512,
    // A JVM that compiles at start: two CPUs, so its health gate is not a CPU race.
    nanoCpus: 2_000_000_000,
    probe: flociHealthProbe(catalog),
    // Floci must know its public URL at start, so the port is chosen before the run.
    hostPort: freeLoopbackPort,
    environment: ({ labels, baseUrl }) => flociEnvironment(baseUrl, labels),
    listResources: (endpoint, services) => listThroughAwsApis(clientConfigFor('floci', endpoint, REGION), catalog, services),
    // Floci checks no credentials: the plane's calls need no operator header.
    cloudFormation: { supportedTypes: () => FLOCI_CLOUDFORMATION_TYPES },
    noSnapshots: 'the plane runs Floci with its in-memory storage, and snapshots through its persistent storage modes are not built yet',
  });
}
