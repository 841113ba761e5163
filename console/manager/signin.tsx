/**
 * The signed-out page: one button that goes to `/console/login`, which sends the browser to the
 * realm `standalone` (authorization code with PKCE) and back with the cookie session.
 */
import { SignInCard } from '../shared/signin.js';

export function SignIn(props: { admin: boolean }) {
  return (
    <SignInCard
      title={props.admin ? 'Sign in to the manager admin console' : 'Sign in to the edge manager'}
      windowTitle="Sign in · Millwright manager"
    >
      <p>
        You sign in with your manager user name and password on the realm <strong>standalone</strong> of this
        manager (OpenID Connect). The first administrator, <span class="mono">admin</span>, and its password
        were printed once when the manager first started.
      </p>
      <a class="btn btn-primary" href="/console/login">
        Sign in
      </a>
    </SignInCard>
  );
}
