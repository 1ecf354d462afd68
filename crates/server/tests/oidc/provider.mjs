// The OpenID provider of the sign-in tests: npm's oidc-provider (certified), on loopback, with
// four people and their groups, its own login form (devInteractions), RP-initiated logout, and
// JWT access tokens for programs (client credentials for the `signoff-api` audience).
//
// Environment: PORT (to listen on), REDIRECT_URIS and POST_LOGOUT_URIS (comma-separated, the
// Signoff servers' /auth/callback and /auth/signed-out), KEY_DIR (where the signing key's PEM
// is written, with a second, unpublished key: the tests sign hostile tokens with them; a
// restart on the same folder keeps them). ROTATED=1 adds a new key, provider-key-2, which signs
// from then on while provider-key-1 stays published (a key rotation). ID_TOKEN_TTL and
// REFRESH_TOKEN_TTL (seconds) shorten those tokens' lives. Prints "listening" when it serves,
// and "jwks" each time its keys are fetched.
import { createPrivateKey, createPublicKey, generateKeyPairSync } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import Provider from "oidc-provider";

const port = Number(process.env.PORT);
const list = (name) => (process.env[name] || "").split(",").filter(Boolean);
const seconds = (name) => (process.env[name] ? Number(process.env[name]) : undefined);

// The key in KEY_DIR/FILE.pem (made and written there the first time) as a JWK named kid.
function key(kid, file) {
  const path = `${process.env.KEY_DIR}/${file}.pem`;
  if (!existsSync(path)) {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    writeFileSync(path, privateKey.export({ type: "pkcs8", format: "pem" }));
  }
  const privateKey = createPrivateKey(readFileSync(path));
  writeFileSync(
    `${process.env.KEY_DIR}/${file}.pub.pem`,
    createPublicKey(privateKey).export({ type: "spki", format: "pem" }),
  );
  return { ...privateKey.export({ format: "jwk" }), kid, alg: "RS256", use: "sig" };
}
const signing = [key("provider-key-1", "provider")];
if (process.env.ROTATED === "1") signing.unshift(key("provider-key-2", "rotated")); // the first signs
key("rogue-key", "rogue"); // never published

// dave's provider never checked the address he gave, which is carol's.
const people = {
  alice: { sub: "alice", name: "Alice Example", email: "alice@example.com", email_verified: true, groups: ["oncall", "sre"] },
  bob: { sub: "bob", name: "Bob Example", email: "bob@example.com", email_verified: true, groups: ["dev"] },
  carol: { sub: "carol", name: "Carol Example", email: "carol@example.com", email_verified: true, groups: ["sre"] },
  dave: { sub: "dave", name: "Dave Example", email: "carol@example.com", email_verified: false, groups: [] },
};

const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [
    {
      client_id: "signoff",
      client_secret: "signoff-secret",
      redirect_uris: list("REDIRECT_URIS"),
      post_logout_redirect_uris: list("POST_LOGOUT_URIS"),
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
    },
    {
      client_id: "ci-job",
      client_secret: "ci-secret",
      grant_types: ["client_credentials"],
      response_types: [],
      redirect_uris: [],
    },
  ],
  jwks: { keys: signing },
  ttl: {
    ...(seconds("ID_TOKEN_TTL") && { IdToken: seconds("ID_TOKEN_TTL") }),
    ...(seconds("REFRESH_TOKEN_TTL") && { RefreshToken: seconds("REFRESH_TOKEN_TTL") }),
  },
  findAccount: async (_ctx, id) =>
    people[id] && { accountId: id, claims: async () => people[id] },
  claims: { openid: ["sub"], profile: ["name"], email: ["email", "email_verified"], groups: ["groups"] },
  scopes: ["openid", "offline_access", "api"],
  conformIdTokenClaims: false,
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => "urn:signoff",
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: "api",
        audience: "signoff-api",
        accessTokenFormat: "jwt",
        jwt: { sign: { alg: "RS256" } },
      }),
    },
  },
  // A refresh token with every sign-in of a client allowed the grant, as Keycloak gives one (this
  // provider otherwise drops offline_access unless the sign-in asked prompt=consent).
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
  extraTokenClaims: async (_ctx, token) =>
    token.kind === "ClientCredentials" ? { groups: ["ci"] } : undefined,
});
// What went wrong inside the provider, on its stderr (a test failing on it shows why).
provider.on("server_error", (_ctx, err) => console.error("server_error:", err));
provider.use(async (ctx, next) => {
  if (ctx.path === "/jwks") console.log("jwks");
  await next();
});
provider.listen(port, "127.0.0.1", () => console.log("listening"));
