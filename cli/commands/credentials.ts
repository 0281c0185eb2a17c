/**
 * `durable-fetch credentials set|list|show`: OAuth2 credentials as operators set and see them
 * (client/credentials.ts, docs/credentials.md).
 */
import type { Command } from 'commander';
import type { CliContext } from '../context.ts';
import { defaultActor } from '../../client/audit.ts';
import type { CredentialView } from '../../client/credentials.ts';
import { table } from '../../client/format.ts';
import { UserFacingError } from '../../runtime/errors.ts';
import { printJson } from './output.ts';

/** The implementation, imported only when a subcommand runs: help loads none of it. */
const impl = async () => {
  const [m0, m1] = await Promise.all([
    import('../../client/credentials.ts'),
    import('../../runtime/credential-cipher.ts'),
  ]);
  return { ...m0, ...m1 };
};

const CREDENTIALS_HELP = `
An OAuth2 credential is a client registration at a provider, used by any number of sources. The
workers fetch and refresh its access tokens, one refresh per expiry across all of them, and keep
its tokens in PostgreSQL sealed with the credentials key (DF_SECRET_CREDENTIALS_KEY: 32 random
bytes in base64, e.g. \`openssl rand -base64 32\`; every worker and this command need the same).
Secrets never go on the command line: the client secret by reference (--client-secret-ref, a
DF_SECRET_* variable the workers resolve), the refresh token on stdin. A credential whose refresh
token the provider refused (invalid_grant) needs reauthorization: runs that need it wait (their
FetchStatus \`awaiting_reauthorization\`) until \`credentials set\` gives it a new token, then go on
by themselves (after about a day, or their maximum run time, they fail with
\`CREDENTIAL_NEEDS_REAUTHORIZATION\`).

Examples:
  durable-fetch credentials set crm --grant refresh_token --token-url https://login.example/oauth/token \\
    --client-id durable-fetch --client-secret-ref DF_SECRET_CRM_CLIENT --reason "new CRM app" < refresh-token.txt
  durable-fetch credentials set ads --grant client_credentials --token-url https://ads.example/token \\
    --client-id app-17 --client-secret-ref DF_SECRET_ADS --scope reports.read --reason "ads reports" < /dev/null`;

/** All of stdin as text, less one trailing newline; '' when stdin is a terminal. */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** `--param name=value`, repeatable. */
function collectParam(value: string, previous: Record<string, string>): Record<string, string> {
  const at = value.indexOf('=');
  if (at <= 0) throw new UserFacingError(`--param: name=value, got '${value}'`, 'INVALID_INPUT');
  return { ...previous, [value.slice(0, at)]: value.slice(at + 1) };
}

function fields(c: CredentialView): [string, string][] {
  return [
    ['credential', c.id],
    ['status', c.status + (c.statusReason ? ` (${c.statusReason})` : '')],
    ['grant', c.grantType],
    ['token url', c.tokenUrl],
    ['client', `${c.clientId} (${c.clientAuth}${c.clientSecretRef ? `, secret ${c.clientSecretRef}` : ''})`],
    ['scope', c.scope ?? '-'],
    ['audience', c.audience ?? '-'],
    ['refresh token', c.hasRefreshToken ? 'stored (sealed)' : 'none'],
    ['access token', c.accessTokenUntil ? `until ${c.accessTokenUntil.toISOString()}` : 'none'],
    ['refreshing', c.refreshingSince ? `since ${c.refreshingSince.toISOString()}` : 'no'],
    ['answers saved', `${c.generation} of ${c.refreshes} token calls`],
    ['updated', c.updatedAt.toISOString()],
  ];
}

/** `durable-fetch credentials …`. */
export function registerCredentials(program: Command, ctx: () => CliContext): void {
  const credentials = program
    .command('credentials')
    .description('OAuth2 credentials: set one (its refresh token from stdin), list them, show one')
    .addHelpText('after', CREDENTIALS_HELP);

  credentials
    .command('set')
    .description('create or replace a credential, its refresh token read from stdin (audited; never printed)')
    .argument('<id>', "the credential's id: 1..63 of a-z, 0-9, '-' and '_'")
    .requiredOption('--grant <type>', 'refresh_token or client_credentials')
    .requiredOption('--token-url <url>', "the provider's token endpoint")
    .requiredOption('--client-id <id>', 'the client id')
    .option('--client-secret-ref <NAME>', 'name of the DF_SECRET_* variable holding the client secret')
    .option('--client-auth <how>', 'basic (HTTP Basic) or post (in the body)', 'basic')
    .option('--scope <scopes>', 'space-separated scopes to ask for')
    .option('--audience <aud>', 'the audience to ask for')
    .option(
      '--param <name=value>',
      'a further token request parameter (repeatable; never a secret)',
      collectParam,
      {},
    )
    .requiredOption('--reason <text>', 'why (1..1000 characters; audited)')
    .option('--by <who>', 'who (default: the OS user)')
    .option('--json', 'print JSON')
    .action(
      async (
        id: string,
        opts: {
          grant: string;
          tokenUrl: string;
          clientId: string;
          clientSecretRef?: string;
          clientAuth: string;
          scope?: string;
          audience?: string;
          param: Record<string, string>;
          reason: string;
          by?: string;
          json?: boolean;
        },
      ) => {
        const m = await impl();
        const key = m.parseMasterKey(process.env.DF_SECRET_CREDENTIALS_KEY);
        const refreshToken = (await readStdin()) || undefined;
        const c = ctx();
        const set = await m.setOperatorCredential(
          { prisma: await c.prisma() },
          {
            id,
            grantType: opts.grant,
            tokenUrl: opts.tokenUrl,
            clientId: opts.clientId,
            ...(opts.clientSecretRef === undefined ? {} : { clientSecretRef: opts.clientSecretRef }),
            clientAuth: opts.clientAuth,
            ...(opts.scope === undefined ? {} : { scope: opts.scope }),
            ...(opts.audience === undefined ? {} : { audience: opts.audience }),
            params: opts.param,
          },
          refreshToken,
          key,
          { actor: opts.by ?? defaultActor(), reason: opts.reason },
        );
        if (opts.json) return printJson(set);
        console.log(
          `set credential ${set.id} (${set.grantType}): active; its tokens are sealed in the database`,
        );
      },
    );

  credentials
    .command('list')
    .description(
      'every credential: status, grant, client, access token expiry, refresh in flight (never a token)',
    )
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const m = await impl();
      const list = await m.listCredentials({ prisma: await ctx().prisma() });
      if (opts.json) return printJson(list);
      if (list.length === 0) return console.log('no credentials');
      const rows = list.map((c) => ({
        credential: c.id,
        status: c.status,
        grant: c.grantType,
        client: c.clientId,
        'access token until': c.accessTokenUntil?.toISOString() ?? '-',
        refreshing: c.refreshingSince ? `since ${c.refreshingSince.toISOString()}` : '-',
      }));
      console.log(
        table(rows, ['credential', 'status', 'grant', 'client', 'access token until', 'refreshing']),
      );
    });

  credentials
    .command('show')
    .description('one credential, field by field (never a token)')
    .argument('<id>', "the credential's id")
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const m = await impl();
      const c = await m.showCredential({ prisma: await ctx().prisma() }, id);
      if (!c) throw new UserFacingError(`no credential '${id}'`, 'NOT_FOUND');
      if (opts.json) return printJson(c);
      const list = fields(c);
      const width = Math.max(...list.map(([k]) => k.length));
      for (const [k, v] of list) console.log(`${k.padEnd(width)}  ${v}`.trimEnd());
    });
}
