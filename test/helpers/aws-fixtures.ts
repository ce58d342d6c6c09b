import { CreateTableCommand } from '@aws-sdk/client-dynamodb';

/** The smallest DynamoDB table a test makes through a sandbox's clientConfig: one string hash key, on demand. */
export function createTableCommand(tableName: string): CreateTableCommand {
  return new CreateTableCommand({
    TableName: tableName,
    AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
  });
}
