//! Typed questions over the wire: `record_return`'s form, answers checked against it, the
//! inspection recorded in the shop's API, and the per-mode capability check.

mod support;

use mrtr::client::{Answer, ScriptedUser, params, retry};
use rmcp::model::{CallToolResponse, InputRequiredResult};
use serde_json::{Value, json};
use support::{serve, start_api};

fn return_call() -> rmcp::model::CallToolRequestParams {
    params("record_return", json!({"order_id": "O-1145", "sku": "KG-1043"}))
}

fn asked(response: CallToolResponse) -> InputRequiredResult {
    match response {
        CallToolResponse::InputRequired(asked) => asked,
        other => panic!("expected input_required, got {other:?}"),
    }
}

fn question(asked: &InputRequiredResult) -> Value {
    serde_json::to_value(&asked.input_requests.as_ref().unwrap()["inspection"]).unwrap()
}

#[tokio::test]
async fn the_form_reaches_the_client_as_the_spec_shapes_it() {
    let api = start_api().await;
    let (client, _) = serve(&api, None, ScriptedUser::always(Answer::Cancel)).await;
    let first = asked(client.call_tool_once(return_call()).await.unwrap());
    let q = question(&first);
    assert_eq!(q["params"]["message"], "You opened the return of KG-1043 from order O-1145. What did you find?");
    let schema = &q["params"]["requestedSchema"];
    assert_eq!(schema["required"], json!(["reason", "restock"]));
    assert_eq!(
        schema["properties"]["reason"]["enum"],
        json!(["damaged in transit", "wrong item sent", "missing part", "arrived late", "changed mind"])
    );
    assert_eq!(schema["properties"]["restock"]["type"], "boolean");
    assert_eq!(schema["properties"]["note"]["maxLength"], 200);
}

#[tokio::test]
async fn an_answer_that_does_not_fit_is_asked_again_and_a_fitting_one_is_recorded() {
    let api = start_api().await;
    let (client, _) = serve(&api, None, ScriptedUser::always(Answer::Cancel)).await;
    let first = asked(client.call_tool_once(return_call()).await.unwrap());

    let wrong = Answer::accept(json!({"reason": "broken", "restock": true}));
    let again = asked(
        client.call_tool_once(retry(return_call(), first.request_state, [("inspection", &wrong)])).await.unwrap(),
    );
    let message = question(&again)["params"]["message"].as_str().unwrap().to_owned();
    assert!(message.starts_with("That answer didn't fit: reason must be one of: damaged in transit,"), "{message}");

    let right = Answer::accept(json!({"reason": "wrong item sent", "restock": true, "note": "Blue, not red"}));
    let finished = client.call_tool_once(retry(return_call(), again.request_state, [("inspection", &right)]));
    let CallToolResponse::Complete(done) = finished.await.unwrap() else { panic!("complete") };
    let texts: Vec<String> = done.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect();
    assert_eq!(texts[0], "Recorded: wrong item sent, restock True.");
    assert_eq!(texts[1], "RT-0001 The policy refunds shipping for this reason.");
    let record: Value = serde_json::from_str(&texts[2]).unwrap();
    assert_eq!((record["note"].as_str(), record["refund_shipping"].as_bool()), (Some("Blue, not red"), Some(true)));
}

#[tokio::test]
async fn a_url_only_client_cannot_be_shown_a_form() {
    let api = start_api().await;
    let url_only = serde_json::from_value(json!({"url": {}})).unwrap();
    let (client, _) = serve(&api, None, ScriptedUser::always(Answer::Cancel).declaring(Some(url_only))).await;
    let error = client.call_tool("record_return", json!({"order_id": "O-1145", "sku": "KG-1043"})).await.unwrap_err();
    let error = error.rpc_error().unwrap();
    assert_eq!(error.code.0, -32021);
    assert_eq!(error.data.as_ref().unwrap()["requiredCapabilities"], json!({"elicitation": {"form": {}}}));
}

mod paying {
    use std::sync::Arc;

    use mrtr::client::{Answer, Client, ScriptedUser, params, retry};
    use payment_provider::{FlowId, ProviderState, RunningProvider};
    use rmcp::model::{
        CallToolResponse, CallToolResult, CancelTaskParams, ElicitRequestParams, GetTaskParams, InputRequest,
        InputRequiredResult,
    };
    use serde_json::json;
    use shop_mcp::serve::ServeConfig;

    use crate::support::{self, KEY_A, serve_with, start_api};

    async fn provider() -> RunningProvider {
        payment_provider::spawn_loopback(Arc::new(ProviderState::default())).await.unwrap()
    }

    /// A shop with one released refund, R-0111, and pay_refund pointed at `provider`.
    async fn shop_with_a_released_refund(
        provider: &RunningProvider,
        rounds: &str,
        user: ScriptedUser,
    ) -> (Client<ScriptedUser>, shop_api::RunningApi) {
        let api = start_api().await;
        let paying = |config: &mut ServeConfig| {
            config.payments.provider = Some(provider.url.clone());
            config.payments.token = provider.token.clone();
            config.payments.max_rounds = rounds.parse().unwrap();
        };
        // One key, so that another server of the same shop opens this one's states.
        let (client, _) = serve_with(&api, Some(KEY_A), paying, user).await;
        let quote = client.call_tool("quote_refund", json!({"order_id": "O-2289"})).await.unwrap();
        let quote_id = quote.structured_content.unwrap()["quote_id"].clone();
        let issue = params("issue_refund", json!({"quote_id": quote_id}));
        let CallToolResponse::InputRequired(asked) = client.call_tool_once(issue.clone()).await.unwrap() else {
            panic!()
        };
        client.call_tool_once(retry(issue, asked.request_state, [("confirm", &support::release())])).await.unwrap();
        (client, api)
    }

    async fn pay(client: &Client<ScriptedUser>, state: Option<String>, answer: Option<Answer>) -> CallToolResponse {
        let call =
            retry(params("pay_refund", json!({"refund_id": "R-0111"})), state, answer.iter().map(|a| ("connect", a)));
        client.call_tool_once(call).await.unwrap()
    }

    fn asked(response: CallToolResponse) -> InputRequiredResult {
        match response {
            CallToolResponse::InputRequired(asked) => asked,
            other => panic!("expected input_required, got {other:?}"),
        }
    }

    fn said(response: CallToolResponse) -> String {
        let CallToolResponse::Complete(result) = response else { panic!("expected complete, got {response:?}") };
        text(&result)
    }

    fn text(result: &CallToolResult) -> String {
        result.content[0].as_text().unwrap().text.clone()
    }

    fn url(asked: &InputRequiredResult) -> String {
        let InputRequest::Elicitation(request) = &asked.input_requests.as_ref().unwrap()["connect"] else { panic!() };
        let ElicitRequestParams::UrlElicitationParams { url, .. } = &request.params else { panic!("not URL mode") };
        url.clone()
    }

    #[tokio::test]
    async fn the_url_names_only_the_flow_and_the_state_keeps_it_across_rounds() {
        let provider = provider().await;
        let (client, _api) =
            shop_with_a_released_refund(&provider, "5", ScriptedUser::always(support::release())).await;
        let first = asked(pay(&client, None, None).await);
        let link = url(&first);
        let flow = link.strip_prefix(&format!("{}/connect/", provider.url)).expect("the provider's connect page");
        assert!(flow.len() >= 32 && flow.chars().all(|c| c.is_ascii_alphanumeric()), "{flow}");
        assert!(!link.contains("R-0111") && !link.contains("lead"), "no personal data in {link}");
        let second = asked(pay(&client, first.request_state, Some(Answer::Accept(None))).await);
        assert_eq!(url(&second), link, "the same flow on every round");
        // The provider knows the flow as the refund's, started by the host's user.
        let record = payment_provider::PaymentProvider::new(&provider.url)
            .unwrap()
            .with_token(provider.token.clone())
            .flow(flow)
            .await
            .unwrap();
        assert_eq!((record.refund_id.as_str(), record.lead.as_deref()), ("R-0111", Some("lead-1")));
    }

    #[tokio::test]
    async fn a_decline_leaves_the_refund_unpaid() {
        let provider = provider().await;
        let (client, _api) =
            shop_with_a_released_refund(&provider, "5", ScriptedUser::always(support::release())).await;
        let first = asked(pay(&client, None, None).await);
        let reply = said(pay(&client, first.request_state, Some(Answer::Decline)).await);
        assert_eq!(reply, "Not paid: the user didn't connect a payment account. R-0111 stays released, unpaid.");
    }

    #[tokio::test]
    async fn an_abandoned_sign_in_stops_after_the_configured_rounds() {
        let provider = provider().await;
        let (client, _api) =
            shop_with_a_released_refund(&provider, "2", ScriptedUser::always(support::release())).await;
        let mut state = asked(pay(&client, None, None).await).request_state;
        state = asked(pay(&client, state, Some(Answer::Accept(None))).await).request_state;
        let reply = said(pay(&client, state, Some(Answer::Accept(None))).await);
        assert!(
            reply.starts_with("Not paid yet: the payment provider has not seen the lead sign in after 2 rounds."),
            "{reply}"
        );
    }

    /// A sign-in that has taken its rounds ends in words before anything would be asked again,
    /// so even a retry from a client that cannot open URLs is told so, not refused with -32021.
    #[tokio::test]
    async fn an_abandoned_sign_in_ends_in_words_before_any_capability_check() {
        let provider = provider().await;
        let (client, api) = shop_with_a_released_refund(&provider, "2", ScriptedUser::always(support::release())).await;
        let mut state = asked(pay(&client, None, None).await).request_state;
        state = asked(pay(&client, state, Some(Answer::Accept(None))).await).request_state;
        let form_only = serde_json::from_value(json!({"form": {}})).unwrap();
        let paying = |config: &mut ServeConfig| {
            config.payments.provider = Some(provider.url.clone());
            config.payments.token = provider.token.clone();
            config.payments.max_rounds = 2;
        };
        let user = ScriptedUser::always(support::release()).declaring(Some(form_only));
        let (other, _) = serve_with(&api, Some(KEY_A), paying, user).await;
        let reply = said(pay(&other, state, Some(Answer::Accept(None))).await);
        assert!(
            reply.starts_with("Not paid yet: the payment provider has not seen the lead sign in after 2 rounds."),
            "{reply}"
        );
    }

    #[tokio::test]
    async fn a_form_only_client_cannot_be_sent_to_a_url() {
        let provider = provider().await;
        let form_only = serde_json::from_value(json!({})).unwrap();
        let user = ScriptedUser::always(support::release()).declaring(Some(form_only));
        let (client, _api) = shop_with_a_released_refund(&provider, "5", user).await;
        let error = client.call_tool("pay_refund", json!({"refund_id": "R-0111"})).await.unwrap_err();
        let error = error.rpc_error().unwrap();
        assert_eq!(
            (error.code.0, &error.data.as_ref().unwrap()["requiredCapabilities"]),
            (-32021, &json!({"elicitation": {"url": {}}}))
        );
    }

    #[tokio::test]
    async fn only_a_released_refund_is_paid() {
        let provider = provider().await;
        let api = start_api().await;
        let paying = |config: &mut ServeConfig| {
            config.payments.provider = Some(provider.url.clone());
            config.payments.token = provider.token.clone();
        };
        let (client, _) = serve_with(&api, None, paying, ScriptedUser::always(support::release())).await;
        let quote = client.call_tool("quote_refund", json!({"order_id": "O-2289"})).await.unwrap();
        let issue = params("issue_refund", json!({"quote_id": quote.structured_content.unwrap()["quote_id"]}));
        client.call_tool_once(issue).await.unwrap(); // held, nobody answered
        let result = client.call_tool("pay_refund", json!({"refund_id": "R-0111"})).await.unwrap();
        assert_eq!(result.is_error, Some(true));
        assert!(text(&result).contains("R-0111 is needs_confirmation; only a released refund"), "{}", text(&result));
    }

    /// A payment waiting as a task, and what it runs on.
    struct PaymentTask {
        state: Arc<ProviderState>,
        provider: RunningProvider,
        _api: shop_api::RunningApi,
        client: Client<ScriptedUser>,
        id: String,
        /// The provider's page the lead was sent to.
        page: String,
    }

    /// A shop whose host declares the Tasks extension, with R-0111 released: `pay_refund` asks
    /// the sign-in question in the call, as it asks every client (the person sees it at once,
    /// not after a poll), and once the lead agreed to go, the call becomes a task that waits for
    /// them to sign in.
    async fn a_payment_waiting_as_a_task() -> PaymentTask {
        let (state, provider, api, client) = a_released_refund_at_a_tasks_host().await;
        let first = asked(pay(&client, None, None).await);
        let page = url(&first);
        assert!(page.starts_with(&format!("{}/connect/", provider.url)) && !page.contains("R-0111"), "{page}");
        let CallToolResponse::Task(created) = pay(&client, first.request_state, Some(Answer::Accept(None))).await
        else {
            panic!("a task once the lead agreed to go")
        };
        let wire = serde_json::to_value(&created).unwrap();
        assert_eq!(
            (wire["status"].as_str(), wire["statusMessage"].as_str()),
            (Some("working"), Some("Waiting for the lead to finish connecting their payment account to pay R-0111."))
        );
        assert!(wire["pollIntervalMs"].as_u64().unwrap() <= 250, "looked at again soon: {wire}");
        PaymentTask { state, provider, _api: api, client, id: created.task.task_id, page }
    }

    /// A host that declares the Tasks extension, and R-0111 released by its lead.
    async fn a_released_refund_at_a_tasks_host()
    -> (Arc<ProviderState>, RunningProvider, shop_api::RunningApi, Client<ScriptedUser>) {
        let state = Arc::new(ProviderState::default());
        let provider = payment_provider::spawn_loopback(state.clone()).await.unwrap();
        let api = start_api().await;
        let paying = |config: &mut ServeConfig| {
            config.payments.provider = Some(provider.url.clone());
            config.payments.token = provider.token.clone();
        };
        let host = ScriptedUser::always(support::release()).declaring_tasks();
        let (client, _) = serve_with(&api, None, paying, host).await;
        let quote = client.call_tool("quote_refund", json!({"order_id": "O-2289"})).await.unwrap();
        // The host's lead is asked in the call, and says yes.
        let released =
            client.call_tool("issue_refund", json!({"quote_id": quote.structured_content.unwrap()["quote_id"]}));
        assert_eq!(released.await.unwrap().structured_content.unwrap()["status"], "requested");
        (state, provider, api, client)
    }

    /// A retry that carries no answer is a question not answered yet: asked again, not made a
    /// task that waits for a sign-in nobody agreed to.
    #[tokio::test]
    async fn a_retry_with_no_answer_is_asked_again_not_made_a_task() {
        let (_state, _provider, _api, client) = a_released_refund_at_a_tasks_host().await;
        let first = asked(pay(&client, None, None).await);
        let link = url(&first);
        let again = asked(pay(&client, first.request_state, None).await);
        assert_eq!(url(&again), link, "the same flow, asked again");
    }

    #[tokio::test]
    async fn a_sign_in_waits_as_a_task_until_the_lead_signs_in_on_the_provider_s_page_then_pays_once() {
        let task = a_payment_waiting_as_a_task().await;
        let (state, provider, client, id, page) = (&task.state, &task.provider, &task.client, &task.id, &task.page);
        // The lead agreed to open the page, and has not signed in: the task works on, unpaid.
        let working =
            serde_json::to_value(client.peer().get_task(GetTaskParams::new(id.as_str())).await.unwrap()).unwrap();
        assert_eq!(working["status"], "working", "{working}");
        assert!(working.get("inputRequests").is_none(), "nothing asked again: {working}");
        let flow = FlowId::parse(page.rsplit('/').next().unwrap()).unwrap();
        let payment = payment_provider::PaymentRequest { flow_id: flow.to_string(), refund_id: "R-0111".into() };
        assert!(state.pay(&payment).is_err(), "nothing can be paid before the lead signs in");
        // The lead signs in on the provider's page; the next reads pay, once.
        let csrf = state.connect_view(&flow).unwrap().csrf_token;
        let (lead, password) = payment_provider::DEMO_ACCOUNTS[0];
        assert!(matches!(state.sign_in(&flow, &csrf, lead, password), Ok(payment_provider::state::SignIn::Connected)));
        let ended = support::task_ended(client, id).await;
        assert_eq!(ended["status"], "completed", "{ended}");
        assert_eq!(ended["result"]["content"][0]["text"], "Paid R-0111 through the payment provider");
        let record = payment_provider::PaymentProvider::new(&provider.url).unwrap().with_token(provider.token.clone());
        assert_eq!(record.flow(flow.as_str()).await.unwrap().finished_by.as_deref(), Some(lead));
        assert_eq!(support::task_ended(client, id).await, ended, "ended once");
        let (paid, made_now) = state.pay(&payment).unwrap();
        assert!(!made_now, "the task paid it, once: {paid:?}");
    }

    /// The host cancels the waiting task: it ends saying what it left, not what it waited for.
    #[tokio::test]
    async fn a_cancelled_sign_in_task_says_the_refund_stays_unpaid() {
        let task = a_payment_waiting_as_a_task().await;
        let (client, id) = (&task.client, &task.id);
        client.peer().cancel_task(CancelTaskParams::new(id.as_str())).await.unwrap();
        let ended =
            serde_json::to_value(client.peer().get_task(GetTaskParams::new(id.as_str())).await.unwrap()).unwrap();
        assert_eq!(
            (ended["status"].as_str(), ended["statusMessage"].as_str()),
            (Some("cancelled"), Some("Cancelled; R-0111 stays released, unpaid."))
        );
    }
}
