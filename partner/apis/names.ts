// The imitated list APIs' names: shared by the kit every API is built from and by the habits an
// API can be given, so that neither imports the other.
/** The imitated APIs, each served under `/apis/<name>/…`. */
export const API_NAMES = [
  'graph',
  'stripe',
  'notion',
  'slack',
  'github-graphql',
  'github-rest',
  'salesforce',
  'hubspot',
  'zendesk',
  'jira',
  'shopify',
  'x',
] as const;
export type ApiName = (typeof API_NAMES)[number];
